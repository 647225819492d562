"""Where the client configuration comes from, and what a bad kubeconfig says."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpi_operator.client.kubeconfig import (
    IN_CLUSTER,
    KubeconfigError,
    Resolved,
    check_kubeconfig,
    load_client_config,
    resolve,
)

GOOD = """
apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
"""


@pytest.mark.parametrize(
    ("explicit", "master", "environ", "want"),
    [
        ("/f", "", {}, Resolved("/f", "from --kubeConfig")),
        ("/f", "", {"KUBECONFIG": "/e"}, Resolved("/e", "from $KUBECONFIG")),
        (None, "", {"KUBECONFIG": ":/a:/b"}, Resolved("/a", "from $KUBECONFIG")),
        (None, "https://h", {}, Resolved("", "--master alone")),
        (
            None,
            "",
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1"},
            Resolved(IN_CLUSTER, "$KUBERNETES_SERVICE_HOST is set"),
        ),
    ],
)
def test_resolve_precedence(
    explicit: str | None, master: str, environ: dict[str, str], want: Resolved
) -> None:
    assert resolve(explicit, master, environ) == want


def test_the_default_path_comes_from_the_injected_home() -> None:
    got = resolve(None, "", {"HOME": "/home/op"})
    assert got.where == "/home/op/.kube/config"
    assert got.origin.startswith("the default: none of --kubeConfig, $KUBECONFIG")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "does not exist"),
        ("a: [\n", "is not valid YAML at line 2: expected the node content"),
        ("", "is empty, not a kubeconfig"),
        ("hello", "is a YAML str, not a kubeconfig"),
        ("- 1\n", "is a YAML list, not a kubeconfig"),
        ("apiVersion: v1\nkind: Config\n", "sets no current-context"),
        ("current-context: x\ncontexts: [{name: y}]\n", "context 'x' is not in its contexts (y)"),
        (b"\xff\xfe", "is not UTF-8 text"),
        ("current-context: x\ncontexts: 3\n", "contexts is a YAML int, not a list"),
    ],
)
def test_a_bad_kubeconfig_is_named_with_what_is_wrong(
    tmp_path: Path, content: str | bytes | None, problem: str
) -> None:
    path = tmp_path / "kubeconfig"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(KubeconfigError) as exc:
        check_kubeconfig(str(path), "from --kubeConfig")
    message = str(exc.value)
    assert message.startswith(f"kubeconfig {path} (from --kubeConfig)"), message
    assert problem in message, message


def test_a_directory_is_not_a_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="is a directory, not a file"):
        check_kubeconfig(str(tmp_path), "from $KUBECONFIG")


def test_an_unreadable_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Root reads any file whatever its mode, so the denial is simulated.
    def denied(self: Path, *args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(KubeconfigError) as exc:
        check_kubeconfig(str(tmp_path / "k"), "from --kubeConfig")
    assert str(exc.value) == (
        f"kubeconfig {tmp_path / 'k'} (from --kubeConfig) cannot be read: permission denied"
    )


def test_a_good_kubeconfig_passes_and_loads(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(GOOD)
    check_kubeconfig(str(path), "from --kubeConfig")


async def test_load_names_the_file_and_the_loaders_complaint(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n")
    with pytest.raises(KubeconfigError) as exc:
        await load_client_config(None, environ={"KUBECONFIG": str(path)})
    assert str(exc.value).startswith(f"kubeconfig {path} (from $KUBECONFIG) cannot be used: ")


async def test_load_uses_the_injected_environment_only(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(GOOD)
    config = await load_client_config(None, environ={"KUBECONFIG": str(path)})
    assert config.configuration.host == "https://127.0.0.1:6443"
    with pytest.raises(KubeconfigError, match=r"\.kube/config \(the default: .*does not exist"):
        await load_client_config(None, environ={"HOME": str(tmp_path)})


async def test_in_cluster_errors_name_the_files(tmp_path: Path) -> None:
    token = tmp_path / "token"
    with pytest.raises(KubeconfigError) as exc:
        await load_client_config(
            None,
            environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
            token_file=str(token),
            cert_file=str(tmp_path / "ca.crt"),
        )
    message = str(exc.value)
    assert message.startswith("in-cluster configuration ($KUBERNETES_SERVICE_HOST is set; ")
    assert str(token) in message and "does not exist" in message
