"""What can go wrong, as exception types.

Every error the controller returns is raised as an ``AccumulusError``
subclass chosen by its gRPC status code, with the controller's message. A spec
the controller refuses is ``InvalidArgumentError`` carrying every field
violation at once (``violations``: the field's path and what is wrong with
it), as the controller sends them in a ``BadRequest`` detail. A spec this
client cannot even read (YAML syntax, an unknown field, an unknown name) is
``SpecError``, naming the file, the line where there is one, and the field.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional

import grpc

from accumulus.v1 import error_details_pb2

__all__ = [
    "AccumulusError", "InvalidArgumentError", "NotFoundError", "AlreadyExistsError",
    "FailedPreconditionError", "PermissionDeniedError", "UnauthenticatedError",
    "ResourceExhaustedError", "UnavailableError", "DeadlineExceededError", "FieldViolation",
    "SpecError", "WatchGapError",
]


@dataclasses.dataclass(frozen=True)
class FieldViolation:
    """One field of a refused spec: its path (``optimizer.lr``,
    ``model.hidden[2]``) and what is wrong with it."""
    field: str
    description: str


class AccumulusError(Exception):
    """An error the controller returned (or the connection to it)."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class InvalidArgumentError(AccumulusError):
    """The request was refused as it is: for a spec, every violation."""

    def __init__(self, code: grpc.StatusCode, message: str,
                 violations: Optional[List[FieldViolation]] = None):
        super().__init__(code, message)
        self.violations: List[FieldViolation] = list(violations or [])


class NotFoundError(AccumulusError):
    """No job has that id."""


class AlreadyExistsError(AccumulusError):
    """A request_id used before with a different spec."""


class FailedPreconditionError(AccumulusError):
    """The job is not in a state that allows it (cancel a finished job, resume
    a running one)."""


class PermissionDeniedError(AccumulusError):
    """The token's role does not allow the call."""


class UnauthenticatedError(AccumulusError):
    """No token, or one the controller does not know."""


class ResourceExhaustedError(AccumulusError):
    """A limit of the controller's (request size, queue)."""


class UnavailableError(AccumulusError):
    """The controller cannot be reached (after the client's retries, for
    calls it retries), is shutting down, or cannot record changes now (its
    state database fails to write: nothing was changed)."""


class DeadlineExceededError(AccumulusError):
    """The call did not finish within its timeout."""


class SpecError(ValueError):
    """A spec this client cannot turn into a JobSpec: the message names the
    source (file), the line where known, and the field (also in ``field``)."""

    field: str = ""


class WatchGapError(RuntimeError):
    """A watch stream skipped sequence numbers: events were lost between
    the controller and this client. Never expected; raised rather than
    yielding an incomplete history."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
}

_DETAILS_KEY = "grpc-status-details-bin"
_BAD_REQUEST_TYPES = ("google.rpc.BadRequest", "accumulus.v1.BadRequest")


def _violations(error: grpc.RpcError) -> List[FieldViolation]:
    """The BadRequest detail's field violations, if the status carries one."""
    trailers = error.trailing_metadata() or ()
    for key, value in trailers:
        if key != _DETAILS_KEY:
            continue
        status = error_details_pb2.RpcStatus.FromString(value)
        out = []
        for detail in status.details:
            # The controller names it google.rpc.BadRequest, whose wire
            # format accumulus.v1.BadRequest shares.
            if detail.type_url.rsplit("/", 1)[-1] in _BAD_REQUEST_TYPES:
                bad_request = error_details_pb2.BadRequest.FromString(detail.value)
                out.extend(FieldViolation(v.field, v.description)
                           for v in bad_request.field_violations)
        return out
    return []


def from_rpc_error(error: grpc.RpcError) -> AccumulusError:
    """The exception for a failed call."""
    code = error.code()
    message = error.details() or ""
    kind = _BY_CODE.get(code, AccumulusError)
    if kind is InvalidArgumentError:
        return InvalidArgumentError(code, message, _violations(error))
    return kind(code, message)
