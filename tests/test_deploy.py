"""deploy/: what can be checked without building an image (no registry for base images here).

- the Kubernetes manifests against the Kubernetes API schemas (kubernetes-validate ships them offline),
  and their shape: Deployments for directory, broker and gateway, StatefulSets with persistent volumes for
  engines and robots, Services, native gRPC probes, resource requests;
- compose.yaml against the compose-spec JSON schema (tests/data/compose_spec.json, from the docker-compose
  1.29.2 wheel on PyPI, Apache-2.0);
- that every container runs the command the namespace test runs (oasis.cluster.launcher.node_command), with
  a [[node]] of the cluster TOML it mounts, running the services its workload is for.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from oasis.cli import build_parser
from oasis.cluster.config import ClusterConfig, parse_config
from oasis.cluster.launcher import node_command

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
K8S_VERSION = "1.30.0"
CONFIG_PATH, STATE_DIR = "/etc/oasis/cluster.toml", "/data"
GRPC_PORTS = {"directory": 7401, "broker": 7402, "engine": 7410, "robot": 7420}


def _k8s_docs() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    return docs


def _dockerfile_instruction(name: str) -> list[str]:
    """The exec (JSON) form of a Dockerfile instruction, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    lines = [line for line in text.splitlines() if line.split(" ", 1)[0] == name]
    assert len(lines) == 1, f"one {name} in deploy/Dockerfile, got {lines}"
    value = json.loads(lines[0][len(name) :].strip())
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), f"{name} in exec form"
    return value


def _container_command(args: list[str]) -> list[str]:
    return _dockerfile_instruction("ENTRYPOINT") + args


def _compose_validator() -> jsonschema.Draft201909Validator:
    """The schema's ``$schema`` names draft 2019-09 with a trailing '#', which jsonschema does not look up."""
    schema = json.loads((ROOT / "tests" / "data" / "compose_spec.json").read_text())
    assert schema["$schema"].startswith("http://json-schema.org/draft/2019-09/schema")
    return jsonschema.Draft201909Validator(schema)


def _node_of(command: list[str], config: ClusterConfig) -> str:
    """The node a container command starts; the command must be node_command(...) exactly."""
    assert command[-2] == "--node", command
    node = command[-1]
    assert command == node_command(CONFIG_PATH, node, STATE_DIR), command
    build_parser().parse_args(command[1:])  # the oasis CLI takes it
    config.node(node)  # and the mounted cluster TOML has that node
    return node


def test_dockerfile_slim_non_root_and_its_command_is_the_namespace_tests() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    base = re.search(r"^FROM\s+(\S+)", text, re.M)
    assert base is not None and re.fullmatch(r"python:3\.1[1-9]-slim", base.group(1)), base
    user = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in ("root", "0")
    command = _dockerfile_instruction("ENTRYPOINT") + _dockerfile_instruction("CMD")
    assert command == node_command(CONFIG_PATH, "hub", STATE_DIR)
    assert command[0] == "oasis"  # the console script tests/test_multihost_netns.py runs in each namespace
    args = build_parser().parse_args(command[1:])
    assert (args.command, str(args.config), args.state_dir, args.node) == (
        "up",
        CONFIG_PATH,
        STATE_DIR,
        "hub",
    )


def test_every_k8s_manifest_is_valid_against_the_kubernetes_schemas() -> None:
    docs = _k8s_docs()
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_kubernetes_validate_catches_a_bad_manifest() -> None:
    bad = copy.deepcopy(next(d for d in _k8s_docs() if d["kind"] == "StatefulSet"))
    bad["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {"grpc": {"port": 7410}}  # a typo
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)
    bad = copy.deepcopy(next(d for d in _k8s_docs() if d["kind"] == "Deployment"))
    bad["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def _k8s_config() -> ClusterConfig:
    maps = [d for d in _k8s_docs() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "oasis-cluster"]
    assert len(maps) == 1
    return parse_config(tomllib.loads(maps[0]["data"]["cluster.toml"]))


def test_k8s_workloads_run_their_node_with_probes_requests_and_volumes() -> None:
    config = _k8s_config()
    docs = _k8s_docs()
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    kinds: dict[str, str] = {}
    for doc in docs:
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        pod = doc["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["containers"]
        node = config.node(_node_of(_container_command(container["args"]), config))
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
        assert any(m["mountPath"] == "/etc/oasis" for m in container["volumeMounts"])
        main = next(s for s in node.services if s != "web")  # a robot's pod also serves its own replayed web
        kind = main.partition(":")[0]
        kinds[main] = doc["kind"]
        for probe in ("livenessProbe", "readinessProbe"):
            if kind == "gateway":
                assert container[probe]["httpGet"] == {"path": "/healthz", "port": node.ports["gateway"]}
            else:  # native gRPC probe on the port the service listens on
                port = GRPC_PORTS[kind]
                assert container[probe]["grpc"]["port"] == port
                if kind in ("directory", "broker"):
                    assert getattr(config, kind).endswith(f":{port}")
                else:
                    assert node.ports[main] == port
        if doc["kind"] == "StatefulSet":  # index / checkpoints and Q-table on a persistent volume
            (claim,) = doc["spec"]["volumeClaimTemplates"]
            assert any(m["name"] == claim["metadata"]["name"] and m["mountPath"] == STATE_DIR
                       for m in container["volumeMounts"])  # fmt: skip
            headless = services[doc["spec"]["serviceName"]]["spec"]
            assert headless["clusterIP"] == "None"
            # the pod's stable DNS name under its headless Service is what the node advertises
            assert node.address == f"{doc['metadata']['name']}-0.{doc['spec']['serviceName']}"
        else:
            assert services[doc["metadata"]["name"]]["spec"]["ports"][0]["port"] in (
                8080,
                *GRPC_PORTS.values(),
            )
            assert node.address == doc["metadata"]["name"]  # its Service name
    topics = [t.name for t in config.topics]
    expected = {"directory": "Deployment", "broker": "Deployment", "gateway": "Deployment"}
    expected |= {f"{k}:{t}": "StatefulSet" for k in ("engine", "robot") for t in topics}
    assert kinds == expected


def test_compose_file_is_valid_and_runs_one_node_per_container() -> None:
    doc = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    _compose_validator().validate(doc)
    config = parse_config(tomllib.loads((DEPLOY / "cluster.compose.toml").read_text()))
    started = set()
    for name, service in doc["services"].items():
        node = config.node(_node_of(_container_command(service["command"]), config))
        assert node.address == name == service["hostname"]  # other containers resolve the service name
        assert any(v.endswith(f":{CONFIG_PATH}:ro") for v in service["volumes"])
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        started.add(node.name)
    assert started == {n.name for n in config.nodes}  # every node has its container


def test_compose_schema_catches_a_bad_file() -> None:
    doc = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    doc["services"]["hub"]["restart_policy"] = "always"  # not a compose key
    with pytest.raises(jsonschema.ValidationError):
        _compose_validator().validate(doc)
    doc = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    doc["services"]["hub"]["ports"] = "7402:7402"  # a list, not a string
    with pytest.raises(jsonschema.ValidationError):
        _compose_validator().validate(doc)
