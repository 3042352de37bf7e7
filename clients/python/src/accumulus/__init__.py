"""accumulus: the Python client of the gradient-accumulation training service.

    from accumulus import Client
    with Client("127.0.0.1:7600", ca_file="ca.pem", token_file="admin.token") as c:
        job = c.submit({"model": {"kind": "mlp", "hidden": [64]}, ...})
        for event in c.watch(job.id):
            if event.WhichOneof("kind") == "step":
                print(event.step.step, event.step.loss)

docs/python.md in the repository describes the API.
"""
from accumulus.client import TERMINAL_STATES, Client
from accumulus.errors import (AccumulusError, AlreadyExistsError, DeadlineExceededError,
                              FailedPreconditionError, FieldViolation, InvalidArgumentError,
                              NotFoundError, PermissionDeniedError, ResourceExhaustedError,
                              SpecError, UnauthenticatedError, UnavailableError, WatchGapError)
from accumulus.spec import enum_value_name, load_spec, spec_from_dict
from accumulus.v1 import controller_pb2, job_pb2

__version__ = "0.1.0"

__all__ = [
    "Client", "TERMINAL_STATES", "AccumulusError", "AlreadyExistsError",
    "DeadlineExceededError", "FailedPreconditionError", "FieldViolation",
    "InvalidArgumentError", "NotFoundError", "PermissionDeniedError", "ResourceExhaustedError",
    "SpecError", "UnauthenticatedError", "UnavailableError", "WatchGapError", "enum_value_name",
    "load_spec", "spec_from_dict", "controller_pb2", "job_pb2",
]
