"""What every API model shares: camelCase JSON names, lossless extra fields, and
for top-level objects the wire (de)serialisation and metadata accessors."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

#: A Kubernetes object in wire (JSON) form, as the API server and the caches hold it.
Obj = dict[str, Any]


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_assignment=False,
    )


class ApiObject(ApiModel):
    """A top-level object; subclasses declare ``metadata`` as a plain dict."""

    metadata: dict[str, Any]

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Self:
        """Parses wire JSON; raises pydantic.ValidationError on wrong types."""
        return cls.model_validate(obj)

    def to_dict(self) -> dict[str, Any]:
        """Wire JSON: only the fields that were given or set by defaulting."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))
