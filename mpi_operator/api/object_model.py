"""What every API model shares: camelCase JSON names, lossless extra fields when read
from the API server, strictness when built in Python, and for top-level objects the wire
(de)serialisation and metadata accessors.

Two ways in, two behaviours:

* **Built in Python** (``RunPolicy(clean_pod_policy="All")``, or ``from_dict(obj,
  strict=True)``): an unknown field, a value outside an enumeration or a wrong type
  raises the SDK's :class:`~mpi_operator.api.model_errors.InvalidSpecError` (a
  ``ValueError``) at once, its ``fields`` naming each field (an unknown one by its own
  path). This is what a user of the SDK gets: ``MPIJobSpec(slots_per_workr=2)`` is
  refused rather than sent, and dropped by the API server. Fields may be named in
  snake_case or camelCase, as with the Kubernetes client.
* **Read from the wire** (``from_dict(obj)``, ``model_validate``): unknown fields are
  kept and an enumerated field keeps a value it does not know as a plain string, so any
  stored object survives a round trip and the operator's validation, not the parser,
  names what is wrong.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from enum import Enum
from typing import Annotated, Any, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    PlainSerializer,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from mpi_operator.api.model_errors import spec_error

#: A Kubernetes object in wire (JSON) form, as the API server and the caches hold it.
Obj = dict[str, Any]


def metadata_of(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """A wire object's metadata; empty (and not attached) when it has none."""
    found: dict[str, Any] = (obj or {}).get("metadata") or {}
    return found


#: The validation context key that makes unknown fields and enum values errors.
STRICT = "mpi_operator.strict"


def is_strict(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get(STRICT))


class _NotAMember:
    """Stands in for an object or list given for an enumerated field (see below)."""

    def __repr__(self) -> str:
        return "<not a member>"


def _enum_error(value: Any, handler: ValidatorFunctionWrapHandler) -> ValidationError:
    """The enum's own error ("input should be 'a', 'b' or 'c'") for ``value``, found
    without giving the enum the value: its ``ValueError`` formats the value with
    ``repr``, which recurses once per level and raises RecursionError for a value
    nested about 1,000 deep, escaping validation."""
    try:
        handler(_NotAMember())
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        line = {"type": first["type"], "loc": (), "input": value, "ctx": first.get("ctx", {})}
        return ValidationError.from_exception_data(exc.title, [line])  # type: ignore[list-item]
    raise AssertionError("an enum took a value that is no member")


def _lenient_enum(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    if isinstance(value, dict | list):
        raise _enum_error(value, handler)
    try:
        return handler(value)
    except ValidationError:
        if isinstance(value, str) and not is_strict(info):
            return value
        raise


def _wire(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


E = TypeVar("E", bound=Enum)

#: An enumerated field: one of ``E``'s values. Read from the wire, an unknown string is
#: kept as is (for validation to report); built in Python, it is refused.
Enumerated = Annotated[E, WrapValidator(_lenient_enum), PlainSerializer(_wire)]


def _empty_or_enum(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    return "" if value == "" else _lenient_enum(value, handler, info)


#: As :data:`Enumerated`, where the CRD also takes ``""`` (meaning the default).
EnumeratedOrEmpty = Annotated[E, WrapValidator(_empty_or_enum), PlainSerializer(_wire)]


@functools.cache
def _known_names(cls: type[BaseModel]) -> frozenset[str]:
    """A model's field names, snake_case and camelCase (its aliases)."""
    return frozenset(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_assignment=False,
    )

    def __init__(self, /, **data: Any) -> None:
        """Builds the model from keyword arguments (snake_case or camelCase names);
        raises :class:`~mpi_operator.api.model_errors.InvalidSpecError` on an unknown
        field, a value outside an enumeration or a wrong type."""
        try:
            self.__pydantic_validator__.validate_python(
                data, self_instance=self, context={STRICT: True}
            )
        except ValidationError as e:
            raise spec_error(e, f"{type(self).__name__} refused") from e

    # Marks this __init__ as pydantic's own kind, so that model_validate (the wire path)
    # validates directly, without calling it.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_fields(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or not is_strict(info):
            return data
        known = _known_names(cls)
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            fields = ", ".join(sorted(f.alias or n for n, f in cls.model_fields.items()))
            raise unknown_names(
                cls.__name__,
                [
                    ((k,), data[k], f"unknown field {k} of {cls.__name__}; its fields: {fields}")
                    for k in unknown
                ],
            )
        return data


def unknown_names(title: str, found: list[tuple[tuple[str, ...], Any, str]]) -> ValidationError:
    """One error per unknown name, each at its own location (``(location, value,
    message)``), where the name is the field itself: raised in a validator, pydantic puts
    the model's location before each."""
    return ValidationError.from_exception_data(
        title,
        [
            {
                "type": "value_error",
                "loc": loc,
                "input": value,
                "ctx": {"error": ValueError(message)},
            }
            for loc, value, message in found
        ],
    )


M = TypeVar("M", bound=BaseModel)


def copy_models(model: M) -> M:
    """A copy of ``model`` and of every model in it, sharing its JSON values (free-form
    fields such as pod templates, and unknown fields): what defaulting a copy needs, as
    defaulting sets model fields only and never changes a JSON value. Unlike
    ``model_copy(deep=True)``, whose ``copy.deepcopy`` recurses twice per level of a JSON
    value and raises RecursionError at about 500 levels, this recursion follows the
    schema's models alone, a few levels whatever the user's data. Models are found in
    fields, and in the lists and dicts that fields hold (a list's items or a dict's values
    are scanned, not walked into)."""
    copied = model.model_copy()
    for name in type(model).model_fields:
        value = copied.__dict__.get(name)
        held = _copy_held(value)
        if held is not value:
            copied.__dict__[name] = held
    return copied


def _copy_held(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return copy_models(value)
    if isinstance(value, list) and any(isinstance(item, BaseModel) for item in value):
        return [copy_models(item) if isinstance(item, BaseModel) else item for item in value]
    if isinstance(value, dict) and any(isinstance(item, BaseModel) for item in value.values()):
        return {
            key: copy_models(item) if isinstance(item, BaseModel) else item
            for key, item in value.items()
        }
    return value


class ApiObject(ApiModel):
    """A top-level object; subclasses declare ``metadata`` as a plain dict."""

    metadata: dict[str, Any]

    @classmethod
    def from_dict(cls, obj: dict[str, Any], *, strict: bool = False) -> Self:
        """Parses wire JSON; raises pydantic.ValidationError on wrong types. With
        ``strict`` (a job built by a user), raises
        :class:`~mpi_operator.api.model_errors.InvalidSpecError` instead, on unknown
        fields and values outside an enumeration too."""
        if not strict:
            return cls.model_validate(obj, context={STRICT: False})
        try:
            return cls.model_validate(obj, context={STRICT: True})
        except ValidationError as e:
            raise spec_error(e, f"{cls.__name__} refused") from e

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
