"""The client against a real controller and worker on loopback."""
import gzip
import os
import uuid

import grpc
import pytest

import accumulus
from accumulus import job_pb2
from conftest import Cluster

SMALL = {
    "name": "py-small",
    "model": {"kind": "mlp", "hidden": [16]},
    "data": {"kind": "synthetic", "task": "classification", "samples": 200, "features": 8,
             "outputs": 3},
    "micro_batch": 8,
    "accumulation_steps": 4,
    "optimizer": {"kind": "sgd", "lr": 0.1, "momentum": 0.9},
    "epochs": 2,
    "seed": 1,
}
# 200 samples in windows of 32: 6 full windows and one of 8, twice.
SMALL_STEPS = 14

# Long enough to be caught running (about 50k steps).
LONG = dict(SMALL, name="py-long", epochs=8000)


def kinds(events):
    return [e.WhichOneof("kind") for e in events]


def assert_contiguous(events, first=1):
    assert [e.sequence for e in events] == list(range(first, first + len(events)))


def small_mlp(data, *, lr, epochs, seed):
    """A job of the small MLP on `data`: micro-batches of 8, two a step."""
    return {
        "model": {"kind": "mlp", "hidden": [8]}, "data": data,
        "micro_batch": 8, "accumulation_steps": 2,
        "optimizer": {"kind": "sgd", "lr": lr}, "epochs": epochs, "seed": seed,
    }


def succeeded(c, spec):
    """Runs `spec` to success; the job's id."""
    job = c.submit(spec)
    final = c.wait(job.id)
    assert final.state == job_pb2.JOB_STATE_SUCCEEDED, final.reason
    return job.id


def losses_of(c, spec):
    """Runs `spec` to success; its steps' losses."""
    return [r["loss"] for r in c.steps(succeeded(c, spec))]


def test_a_job_is_submitted_watched_and_succeeds_with_its_batch_plan(cluster):
    with cluster.client() as c:
        job = c.submit(SMALL)
        assert job.id
        events = list(c.watch(job.id))
        assert_contiguous(events)
        steps = [e.step for e in events if e.WhichOneof("kind") == "step"]
        assert [s.step for s in steps] == list(range(1, SMALL_STEPS + 1))
        # micro 8 × accumulation 4 × 1 device, and the epoch's short window.
        assert {s.effective_batch for s in steps[:6]} == {32}
        assert steps[6].samples == 8
        assert events[-1].state.state == job_pb2.JOB_STATE_SUCCEEDED
        final = c.wait(job.id)
        assert final.state == job_pb2.JOB_STATE_SUCCEEDED
        assert final.batch.global_batch == 32
        assert final.steps_done == SMALL_STEPS


def test_a_watch_resumed_from_a_sequence_number_yields_exactly_what_follows(cluster):
    with cluster.client() as c:
        job = c.submit(SMALL)
        everything = list(c.watch(job.id))
        tail = list(c.watch(job.id, after_sequence=5))
        assert [e.SerializeToString() for e in tail] == [
            e.SerializeToString() for e in everything[5:]]


def test_a_watch_goes_on_through_a_killed_and_restarted_controller(own_cluster):
    with own_cluster.client(retry_timeout=60) as c:
        job = c.submit(dict(SMALL, name="py-through-restart", epochs=300))
        seen = []
        for event in c.watch(job.id):
            seen.append(event)
            steps = sum(1 for e in seen if e.WhichOneof("kind") == "step")
            if steps == 3 and own_cluster.controller.poll() is None:
                own_cluster.kill_controller()
                own_cluster.start_controller()
        assert_contiguous(seen)
        assert seen[-1].state.state == job_pb2.JOB_STATE_SUCCEEDED
        step_numbers = [e.step.step for e in seen if e.WhichOneof("kind") == "step"
                        and not e.stale]
        assert step_numbers == sorted(set(step_numbers))
        assert step_numbers[-1] == c.get(job.id).steps_total


def test_a_running_job_is_cancelled_and_a_cancelled_one_resumes(cluster):
    with cluster.client() as c:
        job = c.submit(LONG)
        for event in c.watch(job.id):
            if event.WhichOneof("kind") == "step":
                break
        cancelled = c.cancel(job.id, reason="from python")
        assert cancelled.id == job.id
        final = c.wait(job.id)
        assert final.state == job_pb2.JOB_STATE_CANCELLED
        with pytest.raises(accumulus.FailedPreconditionError) as e:
            c.cancel(job.id)
        assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
        resumed = c.resume(job.id)
        assert resumed.attempt == final.attempt + 1
        c.cancel(job.id)
        assert c.wait(job.id).state == job_pb2.JOB_STATE_CANCELLED


def test_a_refused_spec_carries_every_violation(cluster):
    bad = dict(SMALL, micro_batch=-3, optimizer={"kind": "sgd", "lr": -1})
    with cluster.client() as c:
        with pytest.raises(accumulus.InvalidArgumentError) as e:
            c.submit(bad)
    fields = {v.field for v in e.value.violations}
    assert {"micro_batch", "optimizer.lr"} <= fields, e.value.violations
    assert all(v.description for v in e.value.violations)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_each_error_class(cluster, tmp_path):
    with cluster.client() as c:
        with pytest.raises(accumulus.NotFoundError):
            c.get("job-doesnotexist")
        request_id = uuid.uuid4().hex
        c.submit(SMALL, request_id=request_id)
        with pytest.raises(accumulus.AlreadyExistsError):
            c.submit(dict(SMALL, seed=2), request_id=request_id)
        done = c.submit(SMALL)
        c.wait(done.id)
        with pytest.raises(accumulus.FailedPreconditionError):
            c.resume(done.id)
    with cluster.client("viewer") as viewer:
        assert viewer.get(done.id).id == done.id
        with pytest.raises(accumulus.PermissionDeniedError):
            viewer.submit(SMALL)
    with cluster.client(token="acc_" + "0" * 64) as stranger:
        with pytest.raises(accumulus.UnauthenticatedError):
            stranger.get(done.id)
    with cluster.client(token="") as anonymous:
        with pytest.raises(accumulus.UnauthenticatedError):
            anonymous.workers()
    with cluster.client() as c:
        # Bigger than any request the controller takes.
        huge = dict(SMALL, labels={f"k{i}": "v" * 200 for i in range(40000)})
        with pytest.raises(accumulus.ResourceExhaustedError):
            c.submit(huge)


def test_a_retried_submit_with_one_request_id_makes_one_job(cluster):
    with cluster.client() as c:
        request_id = uuid.uuid4().hex
        first = c.submit(SMALL, request_id=request_id)
        again = c.submit(SMALL, request_id=request_id)
        assert again.id == first.id


def test_specs_from_a_yaml_file_a_dict_and_a_message_are_the_same(cluster, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("""
name: py-small
model: {kind: mlp, hidden: [16]}
data: {kind: synthetic, task: classification, samples: 200, features: 8, outputs: 3}
micro_batch: 8
accumulation_steps: 4
optimizer: {kind: sgd, lr: 1e-1, momentum: 0.9}
epochs: 2
seed: 1
labels: {sweep: 3}
""")
    from_file = accumulus.load_spec(path)
    from_dict = accumulus.load_spec(dict(SMALL, labels={"sweep": "3"}))
    assert from_file == from_dict
    assert accumulus.load_spec(from_file) is from_file
    assert from_file.optimizer.kind == job_pb2.OPTIMIZER_KIND_SGD
    with cluster.client() as c:
        assert c.submit(path).spec.labels["sweep"] == "3"


def test_a_spec_the_client_cannot_read_names_the_file_the_line_and_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nmodel:\n  kind: mlp\n  hiden: [16]\n")
    with pytest.raises(accumulus.SpecError) as e:
        accumulus.load_spec(path)
    assert str(e.value).startswith(f"{path}: line 4: model.hiden is not a field")
    path.write_text("name: x\noptimizer: {kind: adam}\n")
    with pytest.raises(accumulus.SpecError, match=r"line 2: unknown optimizer.kind 'adam'; "
                                                  r"one of sgd, adamw"):
        accumulus.load_spec(path)
    path.write_text("name: x\nmicro_batch: [1\n")
    with pytest.raises(accumulus.SpecError, match=r"bad.yaml: line 3, column 1"):
        accumulus.load_spec(path)
    path.write_text("name: x\nseed: 1\nmodel: {kind: mlp}\nseed: 2\n")
    with pytest.raises(accumulus.SpecError,
                       match=r"bad.yaml: line 4, column 1: seed is given twice \(first on line 2\)"):
        accumulus.load_spec(path)
    # As the CLI reads YAML: yes and no are text, true and false booleans.
    path.write_text("name: yes\nlabels: {on: off}\nmodel: {activation_checkpointing: true}\n")
    spec = accumulus.load_spec(path)
    assert (spec.name, dict(spec.labels)) == ("yes", {"on": "off"})
    assert spec.model.activation_checkpointing
    with pytest.raises(accumulus.SpecError, match=r"optimizer.lr nan is not a finite number"):
        accumulus.load_spec({"optimizer": {"lr": float("nan")}})
    with pytest.raises(accumulus.SpecError, match=r"micro_batch 2.5 is not a whole number"):
        accumulus.load_spec({"micro_batch": 2.5})


def test_every_value_must_be_of_its_fields_type_as_the_cli_reads_it(tmp_path):
    def error(spec):
        with pytest.raises(accumulus.SpecError) as e:
            accumulus.load_spec(spec)
        return str(e.value)
    assert error({"micro_bach": 8}) == "the spec: micro_bach is not a field; did you mean micro_batch?"
    assert error({"globalBatch": 8}) == (
        "the spec: globalBatch is not a field; did you mean global_batch?")
    assert error({"model": {"hidden": [8, float("nan")]}}) == (
        "the spec: model.hidden[1] nan is not a finite number")
    assert error({"devices": 3_000_000_000}) == (
        "the spec: devices 3000000000 is out of range (-2147483648 to 2147483647)")
    assert error({"seed": -1}) == "the spec: seed -1 is out of range (0 to 18446744073709551615)"
    assert error({"memory_limit_bytes": 1e300}) == (
        "the spec: memory_limit_bytes 1e+300 is too large for its exponent form; write its digits")
    assert accumulus.load_spec({"seed": 2**64 - 1, "memory_limit_bytes": 2e9}).seed == 2**64 - 1
    # A list item is counted from 0, as the controller counts it, and found in the file.
    path = tmp_path / "list.yaml"
    path.write_text("name: x\nmodel:\n  hidden:\n    - 8\n    - 2.5\n")
    assert error(path) == f"{path}: line 5: model.hidden[1] 2.5 is not a whole number"


def test_numpy_values_are_the_numbers_and_lists_they_hold():
    np = pytest.importorskip("numpy")
    spec = accumulus.load_spec({
        "micro_batch": np.int64(8), "accumulation_steps": np.int32(4),
        "optimizer": {"lr": np.float32(0.5), "nesterov": np.bool_(True)},
        "model": {"kind": "mlp", "hidden": np.array([64, 32])},
        "labels": {"fold": np.int64(3)},
    })
    assert (spec.micro_batch, spec.accumulation_steps) == (8, 4)
    assert spec.optimizer.lr == 0.5 and spec.optimizer.nesterov
    assert list(spec.model.hidden) == [64, 32]
    assert spec.labels["fold"] == "3"
    with pytest.raises(accumulus.SpecError, match=r"model.hidden\[1\] 2.5 is not a whole number"):
        accumulus.load_spec({"model": {"hidden": np.array([8, 2.5])}})
    with pytest.raises(accumulus.SpecError, match=r"optimizer.lr nan is not a finite number"):
        accumulus.load_spec({"optimizer": {"lr": np.float64("nan")}})


def test_a_job_trains_on_arrays_saved_with_numpy(cluster, tmp_path):
    np = pytest.importorskip("numpy")
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pandas.DataFrame(rng.normal(size=(96, 4)).astype("float32"), columns=list("abcd"))
    # Features in Fortran order, as pandas often hands them out; labels int64.
    np.save(tmp_path / "x.npy", np.asfortranarray(frame.to_numpy()))
    np.save(tmp_path / "y.npy", (frame["a"] + frame["b"] > 0).to_numpy().astype(np.int64))
    with cluster.client() as c:
        job = c.submit({
            "model": {"kind": "mlp", "hidden": [8]},
            "data": {"kind": "npy", "path": str(tmp_path / "x.npy"),
                     "labels_path": str(tmp_path / "y.npy")},
            "micro_batch": 8, "accumulation_steps": 4,
            "optimizer": {"kind": "sgd", "lr": 0.5}, "epochs": 4,
        })
        final = c.wait(job.id)
        assert final.state == job_pb2.JOB_STATE_SUCCEEDED, final.reason
        rows = c.steps(job.id)
    assert [r["step"] for r in rows] == list(range(1, 13))  # 96 / 32 × 4 epochs
    assert rows[-1]["loss"] < rows[0]["loss"]


def three_classes(np, directory, seed):
    """48 samples of 3 features in 3 classes, saved as x.npy and y.npy in
    `directory`; returns them."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(48, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    np.save(directory / "x.npy", x)
    np.save(directory / "y.npy", y)
    return x, y


def test_labels_as_a_column_or_one_hot_rows_train_as_indices(cluster, tmp_path):
    np = pytest.importorskip("numpy")
    _, y = three_classes(np, tmp_path, seed=6)
    np.save(tmp_path / "column.npy", y.reshape(-1, 1))  # scikit-learn's and pandas' y
    np.save(tmp_path / "one_hot.npy", np.eye(3, dtype=np.float32)[y])  # to_categorical
    np.save(tmp_path / "soft.npy", np.full((48, 3), 1 / 3, dtype=np.float32))

    def job(labels):
        return small_mlp({"kind": "npy", "path": str(tmp_path / "x.npy"),
                          "labels_path": str(tmp_path / labels)}, lr=0.2, epochs=2, seed=7)

    with cluster.client() as c:
        losses = [losses_of(c, job(labels)) for labels in ("y.npy", "column.npy", "one_hot.npy")]
        soft = c.wait(c.submit(job("soft.npy")).id)
    assert len(losses[0]) == 6  # 48 / 16 × 2 epochs
    assert losses[0] == losses[1] == losses[2]
    assert soft.state == job_pb2.JOB_STATE_FAILED
    assert "expected 0 or 1 in sample 0's one-hot row" in soft.reason


def test_npz_archives_and_gzip_files_train_as_the_arrays_they_hold(cluster, tmp_path):
    np = pytest.importorskip("numpy")
    x, y = three_classes(np, tmp_path, seed=8)
    # Keras' mnist.npz layout, deflated; numpy.savez's positional keys, stored.
    np.savez_compressed(tmp_path / "keras.npz", x_train=x, y_train=y, x_test=x[:4], y_test=y[:4])
    np.savez(tmp_path / "positional.npz", x, y)
    with open(tmp_path / "x.npy", "rb") as f, gzip.open(tmp_path / "x.npy.gz", "wb") as g:
        g.write(f.read())

    def job(**data):
        return small_mlp(dict(kind="npy", **data), lr=0.2, epochs=2, seed=3)

    archive = str(tmp_path / "keras.npz")
    with cluster.client() as c:
        plain = losses_of(c, job(path=str(tmp_path / "x.npy"), labels_path=str(tmp_path / "y.npy")))
        keras_id = succeeded(c, job(path=archive, array="x_train", labels_array="y_train"))
        keras = [r["loss"] for r in c.steps(keras_id)]
        # The labels' file is the archive, as the spec says once submitted.
        assert c.get(keras_id).spec.data.labels_path == archive
        positional = losses_of(c, job(path=str(tmp_path / "positional.npz"), array="arr_0",
                                      labels_array="arr_1"))
        gzipped = losses_of(c, job(path=str(tmp_path / "x.npy.gz"),
                                   labels_path=str(tmp_path / "y.npy")))
        unnamed = c.wait(c.submit(job(path=archive, labels_array="y_train")).id)
    assert len(plain) == 6
    assert plain == keras == positional == gzipped
    assert unnamed.state == job_pb2.JOB_STATE_FAILED
    assert ("data.array is required: data.path %s is a zip archive of 4 (x_train.npy "
            "(float32 (48, 3)), y_train.npy (int64 (48,)), x_test.npy (float32 (4, 3)), "
            "y_test.npy (int64 (4,))): name the one to read" % archive) in unnamed.reason


def test_a_safetensors_file_trains_as_the_arrays_it_holds(cluster, tmp_path):
    np = pytest.importorskip("numpy")
    safetensors = pytest.importorskip("safetensors.numpy")
    x, y = three_classes(np, tmp_path, seed=9)
    path = str(tmp_path / "d.safetensors")
    safetensors.save_file({"features": x, "labels": y}, path, metadata={"source": "test"})

    def job(**data):
        return small_mlp(data, lr=0.2, epochs=2, seed=4)

    with cluster.client() as c:
        plain = losses_of(c, job(kind="npy", path=str(tmp_path / "x.npy"),
                                 labels_path=str(tmp_path / "y.npy")))
        tensors = losses_of(c, job(kind="safetensors", path=path, array="features",
                                   labels_array="labels"))
        unnamed = c.wait(c.submit(job(kind="safetensors", path=path)).id)
    assert len(plain) == 6
    assert plain == tensors
    assert unnamed.state == job_pb2.JOB_STATE_FAILED
    assert ("data.array is required: data.path %s holds 2 tensors (features (float32 (48, 3)), "
            "labels (int64 (48,))): name the one to read" % path) in unnamed.reason


def test_several_targets_train_alike_from_a_pandas_csv_and_from_npy(cluster, tmp_path):
    np = pytest.importorskip("numpy")
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    # Quarters: exact in decimal text and in float32, so both files hold the
    # same numbers.
    x = rng.integers(-8, 8, size=(64, 3)) / 4
    frame = pandas.DataFrame(x, columns=["a", "b", "c"])
    frame["y1"] = frame["a"] + frame["b"]
    frame["y2"] = frame["b"] - frame["c"]
    frame.to_csv(tmp_path / "t.csv")  # with the index, as pandas writes by default
    np.save(tmp_path / "x.npy", frame[["a", "b", "c"]].to_numpy(np.float32))
    np.save(tmp_path / "y.npy", frame[["y2", "y1"]].to_numpy(np.float32))
    csv = small_mlp({"kind": "csv", "path": str(tmp_path / "t.csv"), "task": "regression",
                     "label_columns": ["y2", "y1"]}, lr=0.05, epochs=3, seed=5)
    npy = small_mlp({"kind": "npy", "path": str(tmp_path / "x.npy"),
                     "labels_path": str(tmp_path / "y.npy"), "task": "regression"},
                    lr=0.05, epochs=3, seed=5)
    with cluster.client() as c:
        losses = [losses_of(c, spec) for spec in (csv, npy)]
        with pytest.raises(accumulus.InvalidArgumentError,
                           match=r"data.outputs 3 is not the 2 target"):
            c.submit(dict(csv, data=dict(csv["data"], outputs=3)))
    assert len(losses[0]) == 12  # 64 / 16 × 3 epochs
    assert losses[0] == losses[1]
    assert losses[0][-1] < losses[0][0]


def test_a_csv_compressed_or_archived_as_pandas_writes_it_trains_as_the_plain_file(
        cluster, tmp_path):
    np = pytest.importorskip("numpy")
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("zstandard")  # pandas' .zst
    rng = np.random.default_rng(6)
    frame = pandas.DataFrame(rng.normal(size=(48, 3)), columns=["a", "b", "c"])
    frame["label"] = (frame["a"] > 0).astype(int) + (frame["c"] > 0.5).astype(int)
    # pandas picks the compression from the ending.
    names = ["t.csv", "t.csv.gz", "t.csv.bz2", "t.csv.xz", "t.csv.zst", "t.csv.zip",
             "t.csv.tar", "t.csv.tar.gz"]
    for name in names:
        frame.to_csv(tmp_path / name, index=False)

    def job(name):
        return small_mlp({"kind": "csv", "path": str(tmp_path / name)}, lr=0.2, epochs=2,
                         seed=4)

    with cluster.client() as c:
        losses = [losses_of(c, job(name)) for name in names]
    assert len(losses[0]) == 6  # 48 / 16 × 2 epochs
    assert all(other == losses[0] for other in losses[1:])


def test_class_names_and_booleans_from_pandas_train_as_indices(cluster, tmp_path):
    np = pytest.importorskip("numpy")
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    x = rng.integers(-8, 8, size=(48, 2)) / 4
    species = np.array(["virginica", "setosa", "versicolor"])[rng.integers(0, 3, size=48)]
    frame = pandas.DataFrame({"a": x[:, 0], "big": x[:, 1] > 0, "species": species})
    frame.to_csv(tmp_path / "iris.csv")  # index, True/False and names, as pandas writes them
    classes = sorted(set(species))  # byte order: the classes' numbers
    np.save(tmp_path / "x.npy", np.stack([x[:, 0], x[:, 1] > 0], axis=1).astype(np.float32))
    np.save(tmp_path / "y.npy", np.array([classes.index(s) for s in species]))
    with cluster.client() as c:
        losses = [losses_of(c, small_mlp(data, lr=0.2, epochs=2, seed=9)) for data in (
            {"kind": "csv", "path": str(tmp_path / "iris.csv"), "label_column": "species"},
            {"kind": "npy", "path": str(tmp_path / "x.npy"),
             "labels_path": str(tmp_path / "y.npy")})]
    assert len(losses[0]) == 6  # 48 / 16 × 2 epochs
    assert losses[0] == losses[1]


def test_a_frame_of_numbered_columns_without_its_index_trains_as_npy(cluster, tmp_path):
    np = pytest.importorskip("numpy")
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    x = rng.integers(-8, 8, size=(48, 3)) / 4
    y = (x[:, 0] > x[:, 1]).astype(np.int64)
    # A frame made from an array names its columns 0, 1, 2, 3: without the
    # index, the header is a line of numbers.
    pandas.DataFrame(np.column_stack([x, y])).to_csv(
        tmp_path / "t.csv", index=False)
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == "0,1,2,3"
    np.save(tmp_path / "x.npy", x.astype(np.float32))
    np.save(tmp_path / "y.npy", y)
    csv = {"kind": "csv", "path": str(tmp_path / "t.csv")}
    losses, logs = [], []
    with cluster.client() as c:
        for data in (csv, dict(csv, header="first_line"),
                     {"kind": "npy", "path": str(tmp_path / "x.npy"),
                      "labels_path": str(tmp_path / "y.npy")}):
            job_id = succeeded(c, small_mlp(data, lr=0.2, epochs=2, seed=4))
            losses.append([r["loss"] for r in c.steps(job_id)])
            logs.append([e.log.text for e in c.watch(job_id) if e.HasField("log")])
        with pytest.raises(accumulus.InvalidArgumentError,
                           match=r"data.label_column \"y\" is a column name, and data.header "
                                 r"\"none\""):
            c.submit(small_mlp(dict(csv, header="none", label_column="y"),
                               lr=0.2, epochs=2, seed=4))
    assert len(losses[0]) == 6  # 48 / 16 × 2 epochs
    assert losses[0] == losses[1] == losses[2]
    assert (f"data.path {tmp_path / 't.csv'}: line 1 is its header (data.header auto; "
            "first_line or none settles it); 48 samples of 3 features; labels are class "
            "indices, 2 classes") in logs[0]
    assert not any(text.startswith("data.path") for text in logs[2]), "an array is not guessed at"


def test_a_client_with_no_protos_calls_the_api_from_the_servers_own_description(cluster):
    """grpcurl's way, in Python: the services, messages and fields from the
    reflection service, then a call built from them alone."""
    reflection = pytest.importorskip("grpc_reflection.v1alpha.proto_reflection_descriptor_database")
    from google.protobuf import descriptor_pool, json_format, message_factory
    with cluster.client() as c:
        job_id = succeeded(c, small_mlp({"kind": "synthetic", "samples": 32, "features": 4},
                                        lr=0.1, epochs=1, seed=2))
        typed = c.get(job_id)
    with open(cluster.ca_file, "rb") as f:
        credentials = grpc.ssl_channel_credentials(f.read())
    with grpc.secure_channel(cluster.address, credentials) as channel:
        described = reflection.ProtoReflectionDescriptorDatabase(channel)
        assert "accumulus.v1.Controller" in described.get_services()
        pool = descriptor_pool.DescriptorPool(described)
        method = pool.FindServiceByName("accumulus.v1.Controller").methods_by_name["GetJob"]
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        get_job = channel.unary_unary("/accumulus.v1.Controller/GetJob",
                                      request_serializer=request.SerializeToString,
                                      response_deserializer=response.FromString)
        viewer = [("authorization", "Bearer " + cluster.tokens["viewer"])]
        job = get_job(request(job_id=job_id), metadata=viewer)
        assert json_format.MessageToDict(job) == json_format.MessageToDict(typed)
        with pytest.raises(grpc.RpcError) as refused:
            get_job(request(job_id=job_id))  # no token: the API still asks one
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_reflection_is_off_on_the_health_port_and_with_no_reflection(tmp_path):
    reflection = pytest.importorskip("grpc_reflection.v1alpha.proto_reflection_descriptor_database")

    def services(channel):
        try:
            return set(reflection.ProtoReflectionDescriptorDatabase(channel).get_services())
        except grpc.RpcError as e:
            return e.code()

    for args, served in ((["--health-listen", "127.0.0.1:0"], True), (["--no-reflection"], False)):
        root = tmp_path / args[0].strip("-")
        root.mkdir()
        c = Cluster(root, controller_args=args)
        try:
            with open(c.ca_file, "rb") as f:
                credentials = grpc.ssl_channel_credentials(f.read())
            with grpc.secure_channel(c.address, credentials) as api:
                found = services(api)
            if served:
                assert "accumulus.v1.Controller" in found
                with grpc.insecure_channel(f"127.0.0.1:{c.health_port}") as health:
                    assert services(health) == grpc.StatusCode.UNIMPLEMENTED
            else:
                assert found == grpc.StatusCode.UNIMPLEMENTED
        finally:
            assert c.stop() == {"controller": 0}


def test_list_pages_through_every_job_with_the_servers_filters(cluster):
    tag = uuid.uuid4().hex[:8]
    with cluster.client() as c:
        ids = [c.submit(dict(SMALL, labels={"batch": tag})).id for _ in range(5)]
        for job_id in ids:
            c.wait(job_id)
        listed = [j.id for j in c.list(labels={"batch": tag}, page_size=2)]
        assert listed == ids
        succeeded = {j.id for j in c.list(states=["succeeded"], labels={"batch": tag})}
        assert succeeded == set(ids)
        assert list(c.list(states=["running"], labels={"batch": tag})) == []
        with pytest.raises(ValueError, match="unknown job state 'done'"):
            list(c.list(states=["done"]))


def test_workers_lists_the_worker_and_its_slots(cluster):
    with cluster.client() as c:
        workers = c.workers()
    assert [w.id for w in workers] == ["py-worker-1"]
    assert len(workers[0].devices) == 2


def test_steps_are_rows_one_per_step(cluster):
    with cluster.client() as c:
        job = c.submit(SMALL)
        c.wait(job.id)
        rows = c.steps(job.id)
    assert [r["step"] for r in rows] == list(range(1, SMALL_STEPS + 1))
    first = rows[0]
    assert first["effective_batch"] == 32
    # Measured (k = 4): the first micro-batch against the window. The row's
    # estimates are the unbiased ones of those two norms (McCandlish et al.,
    # A.1), and after one window the smoothed ratio is that window's own.
    b, big = first["noise_small_batch"], first["noise_big_batch"]
    small_sq, big_sq = first["noise_small_sq_norm"], first["noise_big_sq_norm"]
    assert (b, big) == (8, 32)
    assert big_sq > 0
    gradient_sq = (big * big_sq - b * small_sq) / (big - b)
    trace = (small_sq - big_sq) / (1 / b - 1 / big)
    assert first["noise_window_gradient_sq_norm"] == pytest.approx(gradient_sq, rel=1e-9)
    assert first["noise_window_noise_trace"] == pytest.approx(trace, rel=1e-9)
    expected = trace / gradient_sq if gradient_sq > 0 else 0
    assert first["noise_scale"] == pytest.approx(expected, rel=1e-9)
    assert "ranks" not in first
    assert rows[0]["attempt"] == 1


def test_steps_of_a_running_job_are_those_done_when_asked(cluster):
    with cluster.client() as c:
        job = c.submit(LONG)
        seen = 0
        for event in c.watch(job.id):
            seen += event.WhichOneof("kind") == "step"
            if seen == 3:
                break
        rows = c.steps(job.id)  # returns while the job runs on
        assert c.get(job.id).state == job_pb2.JOB_STATE_RUNNING
        assert len(rows) >= 3
        assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))
        c.cancel(job.id)
        c.wait(job.id)


def test_steps_frame_is_a_dataframe_indexed_by_step(cluster):
    pandas = pytest.importorskip("pandas")
    with cluster.client() as c:
        job = c.submit(SMALL)
        c.wait(job.id)
        frame = c.steps_frame(job.id)
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.index) == list(range(1, SMALL_STEPS + 1))
    assert frame["loss"].notna().all()


def test_tls_is_checked_against_the_ca_and_plaintext_only_when_asked(cluster, tmp_path):
    other = tmp_path / "other"
    import subprocess
    from conftest import BIN
    subprocess.run([os.path.join(BIN, "accumulus-make-dev-certs"), str(other)], check=True,
                   stdout=subprocess.DEVNULL)
    with cluster.client(ca_file=str(other / "ca.pem"), retry_timeout=0) as wrong_ca:
        with pytest.raises(accumulus.UnavailableError):
            wrong_ca.workers()
    # The certificate names localhost and 127.0.0.1; another name is checked.
    with cluster.client(server_name="localhost") as named:
        assert named.workers()
    with cluster.client(server_name="controller.example", retry_timeout=0) as misnamed:
        with pytest.raises(accumulus.UnavailableError):
            misnamed.workers()
    with cluster.client(insecure=True, retry_timeout=0) as plaintext:
        with pytest.raises(accumulus.UnavailableError):
            plaintext.workers()


def test_nothing_listening_is_unavailable_after_the_retries(tmp_path):
    from conftest import _free_port
    with accumulus.Client(f"127.0.0.1:{_free_port()}", insecure=True, timeout=2,
                          retry_timeout=0.5) as c:
        with pytest.raises(accumulus.UnavailableError):
            c.workers()


def test_a_controller_that_never_answers_is_a_deadline_exceeded(cluster):
    # The kernel completes the TCP handshake for a listening socket nobody
    # accepts from, so the TLS handshake waits for an answer that never
    # comes: the call ends at its deadline, however fast the machine. (A tiny
    # timeout against the real controller is a race: gRPC rounds deadlines up
    # to the millisecond, and a loopback call can finish within one.)
    import socket
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with accumulus.Client(f"127.0.0.1:{port}", ca_file=cluster.ca_file, timeout=0.5,
                              retry_timeout=0) as c:
            with pytest.raises(accumulus.DeadlineExceededError):
                c.workers()
