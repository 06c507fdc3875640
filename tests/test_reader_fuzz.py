"""Issue 27, item 6: a fuzz target for every file reader. Hypothesis writes malformed files —
random bytes, and valid samples mutated (characters and tokens inserted, deleted, replaced: huge
numbers, nan/inf, deep nesting, a BOM, NUL, non-UTF-8) — and every reader must either return
data or raise its one-line input error, never another exception (a traceback for the user).

The budget is fixed and derandomized so CI is reproducible and fast (``FUZZ_EXAMPLES`` per
reader, default 40; raise it locally: ``PLACEMENT_ORACLES_FUZZ_EXAMPLES=2000 pytest
tests/test_reader_fuzz.py``).
"""
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heuristics.gpu.node_list import load_node_list
from heuristics.gpu.snapshot import SnapshotError, load_snapshot
from heuristics.gpu.trace import TraceError
from heuristics.gpu.trace_loaders import FORMATS, load_trace
from heuristics.limits import LimitError
from proofs_check.core.trace import RecordError, load_records
from proofs_check.gpu.audit_tally import parse_bound
from proofs_check.gpu.binding_stream import audit_bindings
from proofs_check.gpu.delta_log import audit_delta
from proofs_check.gpu.node_list import read_node_list

FUZZ_EXAMPLES = int(os.environ.get("PLACEMENT_ORACLES_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,8,V100\nn1,64000,262144,4,T4\n"
SAMPLES: dict[str, str] = {
    "venus": "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
             "b,u1,vcA,4,8,1,COMPLETED,2020-06-09 18:41:11,2020-06-09 18:41:11,2020-06-09 18:41:11,100,0\n",
    "gfs": "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"
           "7,1,A10,4,2.0,4.0,200.0,30.5,HP\n239255,13,A10,20,1,1,0,2764799,HP\n",
    "pai2020": "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"
               "j1,worker,2,Terminated,1000,1600,600,29.3,100,V100\nj1,ps,1,Terminated,1000,1600,400,10,,\n",
    "openb": "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
             "scheduled_time\nopenb-pod-0000,12000,16384,1,1000,,LS,Running,10,12537496,10\n",
    "simple": "job_id,submit,duration,g,w\n0,0,89,1,8\n1,19,17671,2,1\n",
    "snapshot": '{"capacity": 8, "nodes": 3, "placement": [[{"job": 1, "g": 4}, {"job": 2, "g": 2}], [8], []]}',
    "counts": '{"nodes": 4, "counts": {"1": 6, "2": 1, "4": 2}}',
    "nodes": NODES_CSV,
    "delta": '{"format": "delta", "nodes": 4, "capacity": 8}\n'
             '{"event": "arrive", "job": "a", "g": 2, "hosts": [0, 0, 1], "t": 10.5}\n'
             '{"event": "depart", "job": "a"}\n{"event": "snapshot", "placement": [[{"job": "b", "g": 8}]]}\n',
    "bindings": "time,event,pod,node,gpus\n12.5,bind,p-1,n0,2\n13,bind,p-2,n1,4\n80,delete,p-1,,\n",
    "records": '{"results": [{"claim_id": "prop3", "counterexample": {"format_version": 1, "kind": "trace", '
               '"claim": "prop3", "model": "policy", "n_nodes": 2, "events": [], "states": []}}]}',
}
TOKENS = ["0", "-1", "1e309", "nan", "inf", "-inf", "1000000000", str(10 ** 30), "2.5", "", ",", ",,", "\n",
          "\"", "'", "[", "]", "{", "}", ":", "null", "true", "[" * 2000, "{\"a\":" * 600, "\ufeff", "\x00",
          "é", "\r\n", "#", " ", "x"]


@st.composite
def mutated(draw: Any, sample: str) -> bytes:
    """``sample`` with a few random edits, or random bytes, or raw bytes spliced in."""
    kind = draw(st.sampled_from(["edit", "edit", "edit", "bytes", "splice"]))
    if kind == "bytes":
        return draw(st.binary(max_size=400))
    text = sample
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        end = min(len(text), at + draw(st.integers(0, 12)))
        piece = draw(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8)))
        text = text[:at] + piece + text[end:]
    data = text.encode("utf-8", "surrogatepass")
    if kind == "splice":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    return data


def one_line_or_data(read: Callable[[str], Any], data: bytes, errors: tuple[type[Exception], ...],
                     name: str = "input.txt") -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        try:
            read(str(path))
        except errors as e:
            text = str(e)
            assert text and "\n" not in text.strip(), repr(text)
        # any other exception fails the test: the reader let a traceback through


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_trace_loaders(fmt):
    @FUZZ
    @given(mutated(SAMPLES[fmt]))
    def check(data):
        one_line_or_data(lambda p: load_trace(p, fmt), data, (TraceError, LimitError), "trace.csv")
    check()


@pytest.mark.parametrize("sample", ["snapshot", "counts"])
def test_snapshot(sample):
    @FUZZ
    @given(mutated(SAMPLES[sample]))
    def check(data):
        one_line_or_data(load_snapshot, data, (SnapshotError, LimitError), "snap.json")
    check()


def test_node_list():
    @FUZZ
    @given(mutated(SAMPLES["nodes"]))
    def check(data):
        one_line_or_data(load_node_list, data, (TraceError, LimitError), "nodes.csv")
        one_line_or_data(read_node_list, data, (SnapshotError, TraceError, LimitError), "nodes.csv")
    check()


def test_delta_log():
    bound = parse_bound("2")

    @FUZZ
    @given(mutated(SAMPLES["delta"]))
    def check(data):
        one_line_or_data(lambda p: audit_delta(p, bound), data, (SnapshotError, LimitError), "log.jsonl")
    check()


def test_binding_stream(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES_CSV)
    bound = parse_bound("2")

    @FUZZ
    @given(mutated(SAMPLES["bindings"]))
    def check(data):
        one_line_or_data(lambda p: audit_bindings(p, str(nodes), bound), data, (SnapshotError, TraceError, LimitError),
                         "bindings.csv")
    check()


def test_verify_report_records():
    @FUZZ
    @given(mutated(SAMPLES["records"]))
    def check(data):
        one_line_or_data(lambda p: load_records(p, lambda claim: claim == "prop3"), data, (RecordError,), "r.json")
    check()
