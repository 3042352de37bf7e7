"""Generates the gRPC stubs from proto/ into the wheel: accumulus.v1 is the
protos' own package, so their generated imports (`from accumulus.v1 import
job_pb2`) resolve inside this one. ACCUMULUS_PROTO_DIR overrides where the
protos are (default: the repository's proto/, two folders up)."""
import glob
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        from grpc_tools import protoc  # a build requirement (pyproject.toml)

        proto_root = os.environ.get("ACCUMULUS_PROTO_DIR",
                                    os.path.join(HERE, "..", "..", "proto"))
        protos = sorted(glob.glob(os.path.join(proto_root, "accumulus", "v1", "*.proto")))
        if not protos:
            raise SystemExit(f"no protos in {proto_root}/accumulus/v1 (ACCUMULUS_PROTO_DIR)")
        out = self.build_lib
        include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
        args = ["protoc", f"-I{proto_root}", f"-I{include}", f"--python_out={out}",
                f"--pyi_out={out}", f"--grpc_python_out={out}"] + protos
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed on " + " ".join(protos))
        open(os.path.join(out, "accumulus", "v1", "__init__.py"), "w").close()


setup(cmdclass={"build_py": BuildWithStubs})
