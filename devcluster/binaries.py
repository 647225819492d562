"""Where the control-plane binaries built by ``hack/build-binaries.sh`` live."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Binaries taken from ``$KUBEBUILDER_ASSETS`` (envtest's layout) when present there.
ENVTEST_BINARIES = ("kube-apiserver", "etcd", "kubectl")
API_BINARIES = ("etcd", "kube-apiserver", "kubectl")
FULL_BINARIES = (*API_BINARIES, "kube-controller-manager", "kube-scheduler", "kwok")
PODGROUP_CRDS = ("scheduling.volcano.sh_podgroups.yaml", "scheduling.x-k8s.io_podgroups.yaml")


class BinariesMissingError(RuntimeError):
    """The cache lacks a binary: the user has to run ``make binaries``."""


def repo_root() -> Path:
    """The checkout this package is imported from (editable install), else the cwd."""
    here = Path(__file__).resolve().parents[2]
    if (here / "hack" / "build-binaries.sh").is_file():
        return here
    cwd = Path.cwd().resolve()
    for d in (cwd, *cwd.parents):
        if (d / "hack" / "build-binaries.sh").is_file():
            return d
    raise BinariesMissingError(
        f"cannot find the mpi-operator checkout (hack/build-binaries.sh) from {here} or {cwd}"
    )


def cache_dir(root: Path | None = None) -> Path:
    """The versioned cache directory, as computed by ``hack/build-binaries.sh --print-dir``."""
    root = root or repo_root()
    out = subprocess.run(
        ["bash", str(root / "hack" / "build-binaries.sh"), "--print-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip())


@dataclass(frozen=True)
class Binaries:
    """Resolved paths of the binaries and CRDs a cluster needs."""

    dir: Path
    paths: dict[str, Path]

    def __getitem__(self, name: str) -> Path:
        return self.paths[name]

    @property
    def podgroup_crds(self) -> list[Path]:
        return [self.dir / "crds" / n for n in PODGROUP_CRDS]


def find(names: tuple[str, ...] = FULL_BINARIES, root: Path | None = None) -> Binaries:
    """Locate ``names`` (and the PodGroup CRDs); raise :class:`BinariesMissingError`."""
    d = cache_dir(root)
    assets = os.environ.get("KUBEBUILDER_ASSETS", "")
    paths: dict[str, Path] = {}
    missing: list[str] = []
    for name in names:
        candidates = [d / name]
        if assets and name in ENVTEST_BINARIES:
            candidates.insert(0, Path(assets) / name)
        found = next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)
        if found is None:
            missing.append(name)
        else:
            paths[name] = found
    missing += [f"crds/{n}" for n in PODGROUP_CRDS if not (d / "crds" / n).is_file()]
    if missing:
        raise BinariesMissingError(
            f"control-plane binaries missing from {d}: {', '.join(missing)}; "
            "run `make binaries` (hack/build-binaries.sh) first"
        )
    return Binaries(d, paths)
