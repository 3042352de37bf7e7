"""The controller's API from Python: ``Client``.

Every unary call has a deadline (``timeout``). The calls that change nothing
(get, list, workers) and submit — made safe to repeat by its request_id —
are retried with exponential backoff while the controller is UNAVAILABLE
(restarting, or a connection dropped), for up to ``retry_timeout`` seconds;
cancel and resume are not retried, so a lost answer cannot turn into a second
action. ``watch`` reconnects by itself from the last event it yielded.
"""
from __future__ import annotations

import os
import random
import time
import uuid
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import grpc

from accumulus import errors
from accumulus.spec import SpecSource, enum_value_name, is_repeated, load_spec
from accumulus.v1 import controller_pb2, controller_pb2_grpc, job_pb2

__all__ = ["Client", "TERMINAL_STATES"]

DEFAULT_ADDRESS = "127.0.0.1:7600"

TERMINAL_STATES = frozenset({
    job_pb2.JOB_STATE_SUCCEEDED, job_pb2.JOB_STATE_FAILED, job_pb2.JOB_STATE_CANCELLED,
})

# A watch reconnects on these: the controller restarting (UNAVAILABLE), or
# cancelling accepted calls while it stops (CANCELLED, as the CLI does).
_RECONNECT_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED})

JobState = Union[int, str]


def _read_token_file(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        token = f.read().strip()
    if not token:
        raise ValueError(f"token file {path} is empty")
    return token


def _state_number(state: JobState) -> int:
    if isinstance(state, int):
        return state
    name = "JOB_STATE_" + state.upper()
    if name not in job_pb2.JobState.keys():
        names = ", ".join(enum_value_name(job_pb2.JobState.DESCRIPTOR, v)
                          for v in job_pb2.JobState.values() if v)
        raise ValueError(f"unknown job state {state!r}; one of {names}")
    return job_pb2.JobState.Value(name)


class _Backoff:
    """Exponential backoff with jitter within a time budget."""

    def __init__(self, budget_seconds: float, first: float = 0.1, most: float = 5.0):
        self.budget = budget_seconds
        self.first = first
        self.most = most
        self.reset()

    def reset(self) -> None:
        """A fresh budget and first delay (after a success)."""
        self.deadline = time.monotonic() + self.budget
        self.delay = self.first

    def wait(self) -> bool:
        """Sleeps before the next try; False when the budget is spent."""
        pause = self.delay * random.uniform(0.5, 1.0)
        if time.monotonic() + pause > self.deadline:
            return False
        time.sleep(pause)
        self.delay = min(self.delay * 2, self.most)
        return True


class Client:
    """A connection to an accumulus controller.

    Args:
        address: ``host:port``; default ``$ACCUMULUS_CONTROLLER`` or
            ``127.0.0.1:7600``.
        ca_file: PEM file of the CA that signed the controller's certificate;
            default ``$ACCUMULUS_CA_FILE``, else the system's roots.
        server_name: the name to check the controller's certificate against
            (the CLI's ``--tls-server-name``), for an address that is not
            one of the certificate's names, such as a port-forward.
        token: the bearer token; default the contents of ``token_file``,
            ``$ACCUMULUS_TOKEN_FILE``, or ``$ACCUMULUS_TOKEN``.
        insecure: plaintext, for a controller that serves no TLS. Only when
            asked for: the token then travels unencrypted.
        timeout: seconds each unary call may take.
        retry_timeout: seconds a retried call (and a watch's reconnection)
            keeps trying while the controller is unavailable.

    Use it as a context manager, or call ``close()``.
    """

    def __init__(self, address: Optional[str] = None, *, ca_file: Optional[str] = None,
                 server_name: Optional[str] = None, token: Optional[str] = None,
                 token_file: Optional[str] = None, insecure: bool = False,
                 timeout: float = 30.0, retry_timeout: float = 60.0):
        self.address = address or os.environ.get("ACCUMULUS_CONTROLLER") or DEFAULT_ADDRESS
        if token is None:
            token_file = token_file or os.environ.get("ACCUMULUS_TOKEN_FILE")
            token = _read_token_file(token_file) if token_file else os.environ.get(
                "ACCUMULUS_TOKEN")
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout = timeout
        self.retry_timeout = retry_timeout
        # Keepalive pings notice a dead connection under a quiet watch.
        options = [("grpc.keepalive_time_ms", 20000), ("grpc.keepalive_timeout_ms", 10000),
                   ("grpc.keepalive_permit_without_calls", 1)]
        if insecure:
            self._channel = grpc.insecure_channel(self.address, options=options)
        else:
            ca_file = ca_file or os.environ.get("ACCUMULUS_CA_FILE")
            roots = None
            if ca_file:
                with open(ca_file, "rb") as f:
                    roots = f.read()
            credentials = grpc.ssl_channel_credentials(root_certificates=roots)
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            self._channel = grpc.secure_channel(self.address, credentials, options=options)
        self._stub = controller_pb2_grpc.ControllerStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # Unary calls.

    def _call(self, method: Any, request: Any, *, retry: bool) -> Any:
        backoff = _Backoff(self.retry_timeout)
        while True:
            try:
                return method(request, timeout=self.timeout, metadata=self._metadata)
            except grpc.RpcError as e:
                if not (retry and e.code() == grpc.StatusCode.UNAVAILABLE and backoff.wait()):
                    raise errors.from_rpc_error(e) from None

    def submit(self, spec: SpecSource, *, request_id: Optional[str] = None) -> job_pb2.Job:
        """Submits a job: ``spec`` is a dict in the YAML's shape, a YAML
        file's path, or a ``JobSpec``. Returns the queued job.

        A ``request_id`` (a fresh one by default) makes the call safe to
        repeat: the controller returns the job the first request made.
        Raises ``SpecError`` for a spec that cannot be read, and
        ``InvalidArgumentError`` (with ``violations``) for one the controller
        refuses."""
        request = controller_pb2.SubmitJobRequest(
            spec=load_spec(spec), request_id=request_id or uuid.uuid4().hex)
        return self._call(self._stub.SubmitJob, request, retry=True)

    def get(self, job_id: str) -> job_pb2.Job:
        """The whole job: spec, batch plan, state, attempts, last step."""
        return self._call(self._stub.GetJob, controller_pb2.GetJobRequest(job_id=job_id),
                          retry=True)

    def list(self, *, states: Optional[Sequence[JobState]] = None, owner: str = "",
             labels: Optional[Mapping[str, str]] = None,
             page_size: int = 100) -> Iterator[controller_pb2.JobSummary]:
        """Every job that matches the filters, oldest first, fetched a page at
        a time as the iterator is consumed. ``states``: names (``"running"``)
        or ``JobState`` values."""
        request = controller_pb2.ListJobsRequest(
            page_size=page_size, owner=owner,
            states=[_state_number(s) for s in states or ()], labels=dict(labels or {}))
        while True:
            page = self._call(self._stub.ListJobs, request, retry=True)
            yield from page.jobs
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    def cancel(self, job_id: str, reason: str = "") -> job_pb2.Job:
        """Cancels a queued or running job; ``FailedPreconditionError`` for a
        finished one."""
        return self._call(self._stub.CancelJob,
                          controller_pb2.CancelJobRequest(job_id=job_id, reason=reason),
                          retry=False)

    def resume(self, job_id: str) -> job_pb2.Job:
        """Queues a cancelled or failed job again, from its newest checkpoint."""
        return self._call(self._stub.ResumeJob, controller_pb2.ResumeJobRequest(job_id=job_id),
                          retry=False)

    def workers(self) -> List[controller_pb2.WorkerInfo]:
        """The connected workers, their devices and the jobs holding them."""
        response = self._call(self._stub.ListWorkers, controller_pb2.ListWorkersRequest(),
                              retry=True)
        return list(response.workers)

    # Streams.

    def watch(self, job_id: str, after_sequence: int = 0) -> Iterator[job_pb2.JobEvent]:
        """The job's events after ``after_sequence`` (0: from the first), the
        recorded ones then live ones, ending after the event that finishes
        the job. Each is a ``JobEvent``; ``event.WhichOneof("kind")`` says
        which kind (``"step"``, ``"state"``, ``"log"``, ...).

        Reconnects by itself while the controller is unavailable (for up to
        ``retry_timeout`` at a time), from the last event yielded: no event
        is yielded twice, and a gap in the sequence numbers raises
        ``WatchGapError`` instead of passing unseen."""
        last = after_sequence
        backoff = _Backoff(self.retry_timeout)
        while True:
            call = self._stub.WatchJob(
                controller_pb2.WatchJobRequest(job_id=job_id, after_sequence=last),
                metadata=self._metadata)
            try:
                for event in call:
                    if event.sequence <= last:
                        continue  # sent again after a reconnection
                    if event.sequence != last + 1:
                        raise errors.WatchGapError(
                            f"job {job_id}: event {event.sequence} follows event {last}")
                    last = event.sequence
                    backoff.reset()
                    yield event
                return
            except grpc.RpcError as e:
                if e.code() not in _RECONNECT_CODES or not backoff.wait():
                    raise errors.from_rpc_error(e) from None
            finally:
                call.cancel()

    def wait(self, job_id: str) -> job_pb2.Job:
        """Blocks until the job is finished (succeeded, failed or cancelled);
        returns it."""
        for _ in self.watch(job_id):
            pass
        return self.get(job_id)

    def steps(self, job_id: str) -> List[Dict[str, Any]]:
        """The job's optimizer steps so far as rows (dicts of StepMetrics'
        scalar fields, the noise scale's flattened as ``noise_scale``,
        ``noise_gradient_sq_norm``, ...; ``attempt`` and ``time``), one per
        step in step order. A step run again by a later attempt (a
        resume from a checkpoint) is the later attempt's."""
        # What the job had done when asked, not what comes.
        last = self.get(job_id).last_event_sequence
        by_step: Dict[int, Dict[str, Any]] = {}
        if last == 0:
            return []
        events = self.watch(job_id)
        try:
            for event in events:
                if event.WhichOneof("kind") == "step" and not event.stale:
                    by_step[event.step.step] = _step_row(event)
                if event.sequence >= last:
                    break
        finally:
            events.close()
        return [by_step[s] for s in sorted(by_step)]

    def steps_frame(self, job_id: str) -> Any:
        """``steps`` as a pandas DataFrame indexed by step (needs pandas:
        ``pip install accumulus[pandas]``)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("steps_frame needs pandas: pip install 'accumulus[pandas]'") from None
        return pandas.DataFrame(self.steps(job_id)).set_index("step")


def _scalars(message: Any, prefix: str = "") -> Dict[str, Any]:
    row: Dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        if is_repeated(field):
            continue  # per-rank detail: not a column
        value = getattr(message, field.name)
        name = field.name if field.name.startswith(prefix) else prefix + field.name
        if field.message_type is not None:
            row.update(_scalars(value, f"{name}_"))
        else:
            row[name] = value
    return row


def _step_row(event: job_pb2.JobEvent) -> Dict[str, Any]:
    row = _scalars(event.step)
    row["attempt"] = event.attempt
    row["time"] = event.time.ToDatetime() if event.HasField("time") else None
    return row
