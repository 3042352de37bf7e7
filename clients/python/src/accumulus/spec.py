"""Job specs from what ML code has at hand: a dict in the YAML's shape, a YAML
file, or a ``JobSpec`` message.

The shape is the one docs/job-spec.md describes and the ``accumulus`` CLI
reads: closed sets by their names (``optimizer: {kind: adamw}``),
``micro_batch: auto``, ``devices: {min: 2, max: 4}``, labels as text. This
module checks only what it must to build the message — field names, closed
sets' names, finite numbers; the controller validates the rest and names
every violation (``InvalidArgumentError.violations``).
"""
from __future__ import annotations

import math
import os
import re
from typing import Any, Mapping, Union

import yaml
from google.protobuf import descriptor as _descriptor
from google.protobuf import json_format

from accumulus.errors import SpecError
from accumulus.v1 import job_pb2

__all__ = ["SpecSource", "load_spec", "spec_from_dict", "enum_value_name"]

SpecSource = Union[job_pb2.JobSpec, Mapping[str, Any], str, "os.PathLike[str]"]

_FD = _descriptor.FieldDescriptor
_INTEGER_RANGES = {
    _FD.CPPTYPE_INT32: (-2**31, 2**31 - 1),
    _FD.CPPTYPE_UINT32: (0, 2**32 - 1),
    _FD.CPPTYPE_INT64: (-2**63, 2**63 - 1),
    _FD.CPPTYPE_UINT64: (0, 2**64 - 1),
}


class _SpecLoader(yaml.SafeLoader):
    """YAML as the CLI reads a spec: `true` and `false` are the only booleans
    (YAML 1.1's yes, no, on and off stay text, so `name: yes` is "yes"), and
    a key given twice in one mapping is an error, not a silent overwrite."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first = {}
            for key_node, _ in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is None:
                    continue
                if key in first:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"{key} is given twice (first on line {first[key]})",
                        key_node.start_mark)
                first[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


_SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_SpecLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"),
                                  list("tf"))


def is_repeated(field: _descriptor.FieldDescriptor) -> bool:
    """protobuf 6.33 deprecates `label` for the `is_repeated` property."""
    flag = getattr(field, "is_repeated", None)
    return flag if isinstance(flag, bool) else field.label == _FD.LABEL_REPEATED


def _enum_prefix(enum: _descriptor.EnumDescriptor) -> str:
    """OptimizerKind -> OPTIMIZER_KIND_: the prefix every value carries."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"


def enum_value_name(enum: _descriptor.EnumDescriptor, number: int) -> str:
    """A closed set's value as users write it: OPTIMIZER_KIND_ADAMW -> adamw
    (common/enum_names.h's rule)."""
    value = enum.values_by_number.get(number)
    if value is None:
        return str(number)
    return value.name[len(_enum_prefix(enum)):].lower()


def _enum_names(enum: _descriptor.EnumDescriptor) -> str:
    return ", ".join(enum_value_name(enum, v.number) for v in enum.values if v.number != 0)


def _edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (ca != cb))
    return row[-1]


def _closest_field(desc: _descriptor.Descriptor, key: str):
    """The field a misspelt key most likely meant (common/spec_yaml.cc's
    rule): the same name in another case or spelling (globalBatch), or one
    within two edits (micro_bach); None when none is that close."""
    def folded(name: str) -> str:
        return name.replace("_", "").lower()
    best, best_distance = None, 3
    for field in desc.fields:  # in the .proto's order, as the CLI looks
        distance = 0 if folded(field.name) == folded(key) else _edit_distance(field.name, key)
        if distance < best_distance:
            best, best_distance = field.name, distance
    return best


def _plain(value: Any) -> Any:
    """NumPy's scalars and arrays (and torch's tensors) as the Python values
    they hold: ML code's numbers often are those (``np.int64(8)``,
    ``np.bool_``, ``np.array([512, 256])``), which are not ``int``, ``bool``
    or ``list``."""
    if not isinstance(value, (str, bytes, Mapping)) and callable(getattr(value, "tolist", None)):
        return value.tolist()
    return value


class _Converter:
    """The dict in the YAML's shape -> the dict json_format parses (closed
    sets spelled as the proto names them), naming the source on errors."""

    def __init__(self, source: str):
        self.source = source
        self.path = ""  # the field being converted, for an error's line

    def error(self, what: str) -> SpecError:
        error = SpecError(f"{self.source}: {what}")
        error.field = self.path
        return error

    def message(self, value: Any, desc: _descriptor.Descriptor, path: str) -> dict:
        if not isinstance(value, Mapping):
            raise self.error(f"{path or 'the spec'} must be a mapping of fields, not "
                             f"{type(value).__name__}")
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise self.error(f"a key of {path or 'the spec'} is {key!r}; keys are field names")
            name = f"{path}.{key}" if path else key
            self.path = name
            field = desc.fields_by_name.get(key)
            if field is None:
                meant = _closest_field(desc, key)
                if meant is not None:
                    raise self.error(f"{name} is not a field; did you mean {meant}?")
                known = ", ".join(sorted(desc.fields_by_name))
                raise self.error(f"{name} is not a field (one of {known})")
            out[key] = self.field(item, field, name)
        return out

    def field(self, value: Any, field: _descriptor.FieldDescriptor, path: str) -> Any:
        value = _plain(value)
        if value is None:
            return None
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if not isinstance(value, Mapping):
                raise self.error(f"{path} must be a mapping")
            value_field = field.message_type.fields_by_name["value"]
            return {str(k): self.scalar(v, value_field, f"{path}.{k}") for k, v in value.items()}
        if is_repeated(field):
            if not isinstance(value, (list, tuple)):
                raise self.error(f"{path} must be a list")
            # Items counted from 0, as the controller counts them.
            return [self.single(v, field, f"{path}[{i}]") for i, v in enumerate(value)]
        return self.single(value, field, path)

    def single(self, value: Any, field: _descriptor.FieldDescriptor, path: str) -> Any:
        if field.message_type is not None:
            return self.message(value, field.message_type, path)
        return self.scalar(value, field, path)

    def scalar(self, value: Any, field: _descriptor.FieldDescriptor, path: str) -> Any:
        self.path = path  # a list item's error is on the item's line
        value = _plain(value)
        if field.enum_type is not None:
            return self.enum(value, field.enum_type, path)
        if field.type == _FD.TYPE_STRING:
            # Labels and names are text, whatever YAML made of them.
            return value if isinstance(value, str) else str(value)
        if field.type == _FD.TYPE_BOOL:
            if not isinstance(value, bool):
                raise self.error(f"{path} {value!r} is not true or false")
            return value
        if isinstance(value, bool):
            raise self.error(f"{path} {value!r} is not a number")
        if field.type in (_FD.TYPE_DOUBLE, _FD.TYPE_FLOAT):
            number = self.number(value, path)
            if not math.isfinite(number):
                raise self.error(f"{path} {value!r} is not a finite number")
            return number
        number = self.number(value, path)
        if isinstance(number, float):
            if not math.isfinite(number):
                raise self.error(f"{path} {value!r} is not a finite number")
            if number != math.trunc(number):
                raise self.error(f"{path} {value!r} is not a whole number")
            # Beyond 2^53 the float is not the number that was written.
            if abs(number) > 2.0 ** 53:
                raise self.error(f"{path} {value!r} is too large for its exponent form; "
                                 "write its digits")
        whole = int(number)
        low, high = _INTEGER_RANGES[field.cpp_type]
        if not low <= whole <= high:
            raise self.error(f"{path} {value!r} is out of range ({low} to {high})")
        return whole

    def number(self, value: Any, path: str) -> float:
        # YAML 1.1 reads 1e-3 (no dot) as text: take it as the number it is.
        try:
            return value if isinstance(value, (int, float)) else float(str(value))
        except ValueError:
            raise self.error(f"{path} {value!r} is not a number") from None

    def enum(self, value: Any, enum: _descriptor.EnumDescriptor, path: str) -> str:
        if isinstance(value, str):
            candidate = _enum_prefix(enum) + value.upper()
            known = enum.values_by_name.get(candidate)
            if known is not None and known.number != 0:
                return known.name
        raise self.error(f"unknown {path} {value!r}; one of {_enum_names(enum)}")


def spec_from_dict(spec: Mapping[str, Any], source: str = "the spec") -> job_pb2.JobSpec:
    """A JobSpec from a dict in the YAML's shape; SpecError names the field."""
    if not isinstance(spec, Mapping):
        raise SpecError(f"{source}: a job spec must be a mapping of fields")
    shaped = dict(spec)
    # `micro_batch: auto` is the auto_micro_batch flag.
    if shaped.get("micro_batch") == "auto":
        del shaped["micro_batch"]
        shaped["auto_micro_batch"] = True
    # `devices: {min: A, max: B}`: an elastic device count.
    devices = shaped.get("devices")
    if isinstance(devices, Mapping):
        extra = set(devices) - {"min", "max"}
        if extra:
            raise SpecError(f"{source}: devices.{sorted(extra)[0]} is not a field "
                            "(devices: {min, max})")
        if "min" not in devices or "max" not in devices:
            raise SpecError(f"{source}: devices needs both min and max")
        shaped["devices"] = devices["max"]
        shaped["min_devices"] = devices["min"]
    converted = _Converter(source).message(shaped, job_pb2.JobSpec.DESCRIPTOR, "")
    try:
        return json_format.ParseDict(converted, job_pb2.JobSpec())
    except json_format.ParseError as e:
        raise SpecError(f"{source}: {e}") from None


def _line_of(text: str, field: str):
    """The 1-based line of `field` (a.b[2].c) in the YAML text, if found."""
    try:
        node = yaml.compose(text, Loader=_SpecLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field):
        if part.startswith("[") and isinstance(node, yaml.SequenceNode):
            index = int(part[1:-1])
            if not 0 <= index < len(node.value):
                return line
            node = node.value[index]
            line = node.start_mark.line + 1
        elif isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == part), None)
            if match is None:
                return line
            line = match[0].start_mark.line + 1
            node = match[1]
        else:
            return line
    return line


def load_spec(source: SpecSource) -> job_pb2.JobSpec:
    """A JobSpec from a JobSpec (as it is), a dict, or a YAML file's path."""
    if isinstance(source, job_pb2.JobSpec):
        return source
    if isinstance(source, Mapping):
        return spec_from_dict(source)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise SpecError(f"cannot read job spec {path}: {e.strerror}") from None
        try:
            loaded = yaml.load(text, Loader=_SpecLoader)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            raise SpecError(f"{path}: {where}{e.problem or e}") from None
        except yaml.YAMLError as e:
            raise SpecError(f"{path}: {e}") from None
        try:
            return spec_from_dict(loaded if loaded is not None else {}, source=path)
        except SpecError as e:
            line = _line_of(text, getattr(e, "field", ""))
            if line is None:
                raise
            message = str(e)[len(path) + 2:]
            raise SpecError(f"{path}: line {line}: {message}") from None
    raise TypeError(f"a spec is a dict, a YAML file's path or a JobSpec, not "
                    f"{type(source).__name__}")
