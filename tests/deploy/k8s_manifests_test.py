"""deploy/k8s, offline: every overlay renders with kubectl kustomize, every
object validates against the Kubernetes OpenAPI schemas (strictly: unknown
fields are errors), the workloads are hardened as the Pod Security
"restricted" profile asks, and every flag the manifests pass is one its
binary accepts (--check-config).

    python -m unittest k8s_manifests_test      (ACCUMULUS_BIN: the binaries)
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unittest
from pathlib import Path

import kubernetes_validate
import yaml

SOURCE = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("ACCUMULUS_BIN", SOURCE / "build" / "bin"))
KUBECTL = shutil.which("kubectl")
# The oldest Kubernetes the manifests support (gRPC probes, endPort and
# Pod Security admission are GA there) and the newest schemas at hand.
KUBERNETES_VERSIONS = ["1.29.0", kubernetes_validate.latest_version()]
OVERLAYS = ["cpu-dev", "gpu"]
WORKLOAD_KINDS = {"Deployment", "DaemonSet", "StatefulSet"}


def render(directory):
    """The objects `kubectl kustomize DIRECTORY` renders."""
    result = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory}:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def name_of(obj):
    return f"{obj['kind']}/{obj['metadata']['name']}"


def schema_errors(obj):
    """What is wrong with `obj` by the schemas of every supported version."""
    errors = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            errors.append(f"{name_of(obj)} (Kubernetes {version}): {error.message} at "
                          f"{'.'.join(str(p) for p in error.path)}")
    return errors


def pod_specs(objects):
    """(workload, pod spec) of every workload."""
    return [(obj, obj["spec"]["template"]["spec"]) for obj in objects
            if obj["kind"] in WORKLOAD_KINDS]


def find(objects, kind, name):
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(matches) != 1:
        raise AssertionError(f"{kind}/{name}: found {len(matches)}")
    return matches[0]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


@unittest.skipIf(KUBECTL is None, "kubectl is not installed: the manifests cannot be rendered")
class Manifests(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        # A copy, so that the test may add a kustomization and secrets files.
        cls.tmp = tempfile.TemporaryDirectory()
        cls.deploy = Path(cls.tmp.name) / "deploy"
        shutil.copytree(SOURCE / "deploy", cls.deploy,
                        ignore=shutil.ignore_patterns("files"))
        cls.rendered = {overlay: render(cls.deploy / "k8s" / "overlays" / overlay)
                        for overlay in OVERLAYS}
        # The optional monitoring component, on the GPU overlay.
        with_monitoring = cls.deploy / "k8s" / "overlays" / "gpu-with-monitoring"
        with_monitoring.mkdir()
        (with_monitoring / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources: [../gpu]\ncomponents: [../../components/monitoring]\n")
        cls.rendered["gpu-with-monitoring"] = render(with_monitoring)
        # The Secrets, from files make.sh makes.
        made = subprocess.run([str(cls.deploy / "k8s" / "secrets" / "make.sh")],
                              capture_output=True, text=True)
        if made.returncode != 0:
            raise AssertionError(f"secrets/make.sh: {made.stderr}")
        cls.secrets = render(cls.deploy / "k8s" / "secrets")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def all_objects(self):
        for overlay, objects in self.rendered.items():
            for obj in objects:
                yield overlay, obj

    def test_every_object_validates_against_the_kubernetes_schemas(self):
        checked = 0
        errors = []
        for overlay, obj in list(self.all_objects()) + [("secrets", s) for s in self.secrets]:
            if obj["apiVersion"].startswith("monitoring.coreos.com/"):
                continue  # a CRD: no schema in Kubernetes' own (checked below)
            errors += [f"{overlay}: {e}" for e in schema_errors(obj)]
            checked += 1
        self.assertEqual(errors, [])
        self.assertGreater(checked, 30)

    def test_a_broken_object_fails_validation(self):
        deployment = find(self.rendered["cpu-dev"], "Deployment", "accumulus-controller")
        self.assertEqual(schema_errors(deployment), [])
        wrong_name = copy.deepcopy(deployment)
        wrong_name["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
        wrong_type = copy.deepcopy(deployment)
        wrong_type["spec"]["replicas"] = "one"
        missing = copy.deepcopy(deployment)
        del missing["spec"]["selector"]
        for broken, says in [(wrong_name, "imagePullPolicyy"), (wrong_type, "'one'"),
                             (missing, "'selector' is a required property")]:
            errors = schema_errors(broken)
            self.assertEqual(len(errors), len(KUBERNETES_VERSIONS), errors)
            self.assertIn(says, errors[0])

    def test_a_broken_source_file_fails_the_render_or_the_validation(self):
        broken = Path(self.tmp.name) / "broken"
        shutil.copytree(self.deploy, broken)
        worker = broken / "k8s" / "workers" / "cpu" / "worker.yaml"
        worker.write_text(worker.read_text().replace("readinessProbe:", "readinessProbes:"))
        errors = [e for obj in render(broken / "k8s" / "overlays" / "cpu-dev")
                  for e in schema_errors(obj)]
        self.assertTrue(any("readinessProbes" in e and "accumulus-worker-cpu" in e
                            for e in errors), errors)

    def test_the_monitors_select_the_metrics_ports(self):
        objects = self.rendered["gpu-with-monitoring"]
        service_monitor = find(objects, "ServiceMonitor", "accumulus-controller")
        service = find(objects, "Service", "accumulus-controller")
        self.assertTrue(selects(service_monitor["spec"]["selector"], service["metadata"]["labels"]))
        self.assertIn(service_monitor["spec"]["endpoints"][0]["port"],
                      [p["name"] for p in service["spec"]["ports"]])
        pod_monitor = find(objects, "PodMonitor", "accumulus-worker")
        worker = find(objects, "DaemonSet", "accumulus-worker-gpu")
        template = worker["spec"]["template"]
        self.assertTrue(selects(pod_monitor["spec"]["selector"], template["metadata"]["labels"]))
        ports = [p["name"] for c in template["spec"]["containers"] for p in c.get("ports", [])]
        self.assertIn(pod_monitor["spec"]["podMetricsEndpoints"][0]["port"], ports)

    def test_every_workload_is_restricted_and_bounded(self):
        problems = []
        workloads = 0
        for overlay, objects in self.rendered.items():
            accounts = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ServiceAccount"}
            for account in accounts.values():
                if account.get("automountServiceAccountToken") is not False:
                    problems.append(f"{overlay}: {name_of(account)} mounts its token")
            for workload, pod in pod_specs(objects):
                workloads += 1
                where = f"{overlay}: {name_of(workload)}"
                problems += [f"{where}: {p}" for p in self.pod_problems(pod, accounts)]
        self.assertEqual(problems, [])
        self.assertGreaterEqual(workloads, 4)

    @staticmethod
    def pod_problems(pod, accounts):
        problems = []
        security = pod.get("securityContext", {})
        if security.get("runAsNonRoot") is not True:
            problems.append("runAsNonRoot is not true")
        if not isinstance(security.get("runAsUser"), int) or security["runAsUser"] == 0:
            problems.append(f"runAsUser {security.get('runAsUser')!r} is not a non-root UID")
        if security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problems.append("seccompProfile is not RuntimeDefault")
        if pod.get("automountServiceAccountToken") is not False:
            problems.append("the pod mounts a service account token")
        if pod.get("serviceAccountName") not in accounts:
            problems.append(f"serviceAccountName {pod.get('serviceAccountName')!r} is not ours")
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            if pod.get(field):
                problems.append(f"{field} is set")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for volume in volumes.values():
            if "hostPath" in volume:
                problems.append(f"volume {volume['name']} is a hostPath")
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            at = f"container {container['name']}"
            context = container.get("securityContext", {})
            if context.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{at}: allowPrivilegeEscalation is not false")
            if context.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{at}: readOnlyRootFilesystem is not true")
            if context.get("capabilities", {}).get("drop") != ["ALL"]:
                problems.append(f"{at}: capabilities do not drop ALL")
            if context.get("capabilities", {}).get("add"):
                problems.append(f"{at}: adds capabilities")
            if context.get("privileged"):
                problems.append(f"{at}: privileged")
            tmp = [m for m in container.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
            if not tmp or "emptyDir" not in volumes.get(tmp[0]["name"], {}):
                problems.append(f"{at}: /tmp is not an emptyDir")
            resources = container.get("resources", {})
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in resources.get(kind, {}):
                        problems.append(f"{at}: no {resource} {kind}")
            image = container.get("image", "")
            tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
            if not tag or tag == "latest":
                problems.append(f"{at}: image {image!r} has no version tag")
            for probe in ("livenessProbe", "readinessProbe"):
                if probe not in container:
                    problems.append(f"{at}: no {probe}")
        return problems

    def test_the_namespace_enforces_the_restricted_profile(self):
        for overlay, objects in self.rendered.items():
            namespace = find(objects, "Namespace", "accumulus")
            labels = namespace["metadata"]["labels"]
            self.assertEqual(labels.get("pod-security.kubernetes.io/enforce"), "restricted", overlay)
            for obj in objects:
                if obj["kind"] != "Namespace":
                    self.assertEqual(obj["metadata"].get("namespace"), "accumulus", name_of(obj))

    def test_the_controller(self):
        for overlay, objects in self.rendered.items():
            controller = find(objects, "Deployment", "accumulus-controller")
            spec = controller["spec"]
            self.assertEqual(spec["replicas"], 1, overlay)
            self.assertEqual(spec["strategy"]["type"], "Recreate", overlay)
            pod = spec["template"]["spec"]
            container = pod["containers"][0]
            # gRPC-native probes on the standard health service.
            self.assertIn("grpc", container["readinessProbe"], overlay)
            self.assertIn("grpc", container["livenessProbe"], overlay)
            claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]
                      if "persistentVolumeClaim" in v]
            self.assertEqual(claims, ["accumulus-controller-state"], overlay)
            find(objects, "PersistentVolumeClaim", "accumulus-controller-state")
            service = find(objects, "Service", "accumulus-controller")
            self.assertEqual({p["name"] for p in service["spec"]["ports"]}, {"grpc", "metrics"})
            budget = find(objects, "PodDisruptionBudget", "accumulus-controller")
            self.assertTrue(selects(budget["spec"]["selector"],
                                    spec["template"]["metadata"]["labels"]), overlay)
            secrets = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
            self.assertEqual(secrets, {s["metadata"]["name"] for s in self.secrets},
                             "the controller mounts the Secrets deploy/k8s/secrets makes")

    def test_the_workers(self):
        gpu = find(self.rendered["gpu"], "DaemonSet", "accumulus-worker-gpu")
        pod = gpu["spec"]["template"]["spec"]
        container = pod["containers"][0]
        self.assertIn("nvidia.com/gpu", container["resources"]["limits"])
        self.assertIn("nvidia.com/gpu.present", pod["nodeSelector"])
        self.assertIn("nvidia.com/gpu", [t["key"] for t in pod["tolerations"]])
        cpu = find(self.rendered["cpu-dev"], "Deployment", "accumulus-worker-cpu")
        for worker in (gpu, cpu):
            pod = worker["spec"]["template"]["spec"]
            container = pod["containers"][0]
            env = {e["name"]: e for e in container.get("env", [])}
            advertised = [a for a in container["args"] if a.startswith("--advertise-address=")]
            self.assertEqual(len(advertised), 1, name_of(worker))
            variable = re.fullmatch(r"--advertise-address=\$\((\w+)\)", advertised[0]).group(1)
            self.assertEqual(env[variable]["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP")
            # Checkpoints on the one shared volume, at the same path everywhere.
            shared = [v for v in pod["volumes"]
                      if v.get("persistentVolumeClaim", {}).get("claimName") == "accumulus-shared"]
            self.assertEqual(len(shared), 1, name_of(worker))
            mounts = [m["mountPath"] for m in container["volumeMounts"]
                      if m["name"] == shared[0]["name"]]
            self.assertEqual(mounts, ["/shared"], name_of(worker))
        claim = find(self.rendered["gpu"], "PersistentVolumeClaim", "accumulus-shared")
        self.assertEqual(claim["spec"]["accessModes"], ["ReadWriteMany"])

    def test_the_scrape_annotations_name_the_metrics_port(self):
        for overlay, objects in self.rendered.items():
            for workload, pod in pod_specs(objects):
                annotations = workload["spec"]["template"]["metadata"]["annotations"]
                ports = {p["name"]: p["containerPort"] for p in pod["containers"][0]["ports"]}
                self.assertEqual(int(annotations["prometheus.io/port"]), ports["metrics"],
                                 f"{overlay}: {name_of(workload)}")

    def test_the_workers_roots_are_mounted(self):
        # The worker refuses to start on a root that is not a directory: on a
        # fresh volume only its mount point is one.
        for overlay, objects in self.rendered.items():
            config = find(objects, "ConfigMap", "accumulus-worker-config")
            flags = tomllib.loads(config["data"]["worker.toml"])
            roots = flags["data-root"] + flags["output-root"]
            self.assertTrue(roots, overlay)
            for workload, pod in pod_specs(objects):
                container = pod["containers"][0]
                if container["name"] != "worker":
                    continue
                mounted = {m["mountPath"] for m in container["volumeMounts"]}
                for root in roots:
                    self.assertIn(root, mounted, f"{overlay}: {name_of(workload)}")

    def test_network_policies_deny_by_default(self):
        for overlay, objects in self.rendered.items():
            policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
            deny = [p for p in policies if p["spec"]["podSelector"] == {}
                    and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
                    and not p["spec"].get("ingress") and not p["spec"].get("egress")]
            self.assertEqual(len(deny), 1, overlay)
            # Workers reach each other on the ports their pods bound
            # (sysctl) and the rendezvous range their flags give.
            worker_ingress = find(objects, "NetworkPolicy", "worker-ingress")
            ranges = {(p["port"], p.get("endPort")) for rule in worker_ingress["spec"]["ingress"]
                      for p in rule.get("ports", []) if isinstance(p["port"], int)}
            for _, pod in pod_specs(objects):
                if "worker" not in pod["containers"][0]["name"]:
                    continue
                sysctls = {s["name"]: s["value"] for s in pod["securityContext"]["sysctls"]}
                low, high = map(int, sysctls["net.ipv4.ip_local_port_range"].split())
                self.assertIn((low, high), ranges, overlay)

    def test_every_flag_is_accepted_by_its_binary(self):
        checked = 0
        for overlay, objects in self.rendered.items():
            config_maps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}
            for workload, pod in pod_specs(objects):
                for container in pod["containers"]:
                    result = self.check_config(container, pod, config_maps)
                    self.assertEqual(result.returncode, 0,
                                     f"{overlay}: {name_of(workload)}: {result.stderr}")
                    self.assertIn("configuration ok", result.stdout)
                    checked += 1
        self.assertGreaterEqual(checked, 4)

    def test_a_misspelled_flag_in_a_config_map_is_refused(self):
        objects = copy.deepcopy(self.rendered["cpu-dev"])
        config_maps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}
        config = config_maps["accumulus-worker-config"]["data"]
        config["worker.toml"] = config["worker.toml"].replace("metrics-port", "metrics-prot")
        worker = find(objects, "Deployment", "accumulus-worker-cpu")["spec"]["template"]["spec"]
        result = self.check_config(worker["containers"][0], worker, config_maps)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("metrics-prot", result.stderr)

    def check_config(self, container, pod, config_maps):
        """Runs the container's command with its args, its ConfigMaps' files
        where it mounts them, and --check-config."""
        binary = BIN / Path(container["command"][0]).name
        self.assertTrue(binary.exists(), f"{binary} (ACCUMULUS_BIN)")
        values = {e["name"]: e.get("value", f"from-{e['name'].lower()}")
                  for e in container.get("env", [])}
        mounts = {}
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        work = Path(tempfile.mkdtemp(dir=self.tmp.name))
        for mount in container.get("volumeMounts", []):
            volume = volumes[mount["name"]]
            if "configMap" in volume:
                data = config_maps[volume["configMap"]["name"]]["data"]
                directory = work / mount["name"]
                directory.mkdir()
                for key, text in data.items():
                    (directory / key).write_text(text)
                mounts[mount["mountPath"]] = str(directory)
        args = []
        for arg in container.get("args", []):
            arg = re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], arg)
            for path, local in mounts.items():
                arg = arg.replace(path + "/", local + "/")
            args.append(arg)
        return subprocess.run([str(binary), *args, "--check-config"], capture_output=True,
                              text=True, timeout=60)


class GrafanaProvisioning(unittest.TestCase):
    """The datasource and dashboard provider Grafana reads, and the dashboard
    they serve, agree with each other."""

    GRAFANA = SOURCE / "deploy" / "grafana"

    def test_the_datasource_and_the_provider(self):
        datasources = yaml.safe_load((self.GRAFANA / "provisioning" / "datasources" /
                                      "accumulus.yaml").read_text())
        self.assertEqual(datasources["apiVersion"], 1)
        [source] = datasources["datasources"]
        self.assertEqual(source["type"], "prometheus")
        self.assertTrue(source["url"].startswith("http"))
        providers = yaml.safe_load((self.GRAFANA / "provisioning" / "dashboards" /
                                    "accumulus.yaml").read_text())
        [provider] = providers["providers"]
        self.assertEqual(provider["type"], "file")
        self.assertTrue(provider["options"]["path"].startswith("/"))

    def test_every_panel_queries_the_chosen_prometheus(self):
        dashboard = json.loads((self.GRAFANA / "dashboards" / "accumulus.json").read_text())
        self.assertTrue(dashboard["uid"])
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        self.assertIn("job_id", json.dumps(variables["job"]["query"]))
        targets = 0
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                self.assertEqual(target["datasource"]["uid"], "${datasource}", panel["title"])
                targets += 1
        self.assertGreater(targets, 30)

    @unittest.skipIf(KUBECTL is None, "kubectl is not installed: the manifests cannot be rendered")
    def test_the_overlays_carry_the_same_dashboard_for_the_sidecar(self):
        for overlay in OVERLAYS:
            objects = render(SOURCE / "deploy" / "k8s" / "overlays" / overlay)
            config_map = find(objects, "ConfigMap", "accumulus-grafana-dashboard")
            self.assertEqual(config_map["metadata"]["labels"]["grafana_dashboard"], "1")
            self.assertEqual(json.loads(config_map["data"]["accumulus.json"]),
                             json.loads((self.GRAFANA / "dashboards" / "accumulus.json").read_text()))


if __name__ == "__main__":
    sys.exit(unittest.main())
