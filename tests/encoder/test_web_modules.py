"""The browser-side modules as the hosts load them (encoder.web.hosts): every file parses as an ES
module on its own and is in a host's module, every host's joined module parses, and the
explorer's decoder reads back what Python's encoder (encoder.web.payload) wrote, within the
encoder's quantisation: the weights, what each head moves (weights x value norms, as
encoder.inspect.moves) and the rollout. Needs node: skipped without it, except under CI=true."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import encoder.web
from encoder.web.hosts import (
    HOSTS,
    PAGE_STUB,
    host_module,
    joined,
    page_library,
    page_stub,
)
from encoder.web.payload import (
    SCALE,
    block_tiles,
    build_setup,
    decode_readings,
    encode,
    start_at,
    tile_side,
    with_large_text,
    with_start,
)
from tests.e2e.harness import missing
from tests.encoder.helpers import softmax_attention

WEB = Path(encoder.web.__file__).parent
READER = Path(__file__).with_name("read_payload.mjs")
JOINED = re.compile(r"^// ---- (\S+)$", re.MULTILINE)  # a file's place in a joined module
QUANTUM = 0.5 / SCALE + 1e-7  # uint16 rounding, plus float32's


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node") or shutil.which("nodejs")
    if found is None:
        missing("node (Debian's nodejs)")
    return found


def parses(node: str, path: Path, text: str) -> None:
    """`text` parses as an ES module (the file written to `path`, an .mjs: `node --check` of a .js
    that holds `import` can pass what does not parse, node 20's module detection)."""
    path.write_text(text, encoding="utf-8")
    checked = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_every_browser_file_parses_as_a_module_and_is_in_a_hosts_module(node, tmp_path) -> None:
    files = {path.relative_to(WEB).as_posix(): path for path in WEB.rglob("*.js")}
    for name, path in files.items():
        parses(node, tmp_path / name.replace("/", "-").replace(".js", ".mjs"), path.read_text())
    used = {name for host in HOSTS for name in JOINED.findall(host_module(host))}
    assert set(files) == {name for name in used if not name.startswith("host_")} | {PAGE_STUB}


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_every_hosts_module_parses(node, tmp_path, host) -> None:
    parses(node, tmp_path / f"{host}.mjs", host_module(host))


PAGE_HOSTS = sorted(host for host in HOSTS if host.startswith("streamlit_"))


@pytest.mark.parametrize("host", PAGE_HOSTS)
def test_a_page_hosts_script_and_stub_parse_and_the_stub_hands_calls_to_the_script(
    node, tmp_path, host
) -> None:
    library, stub = page_library(host), page_stub(host)
    # st.html drops a script that holds a tag's opening ("<b", "</"), even in a string or comment
    assert re.search(r"<[A-Za-z/!\[]", library) is None
    parses(node, tmp_path / "library.mjs", library)
    parses(node, tmp_path / "stub.mjs", stub)
    # the stub called before the page's script has run: it waits, then hands the call over;
    # its cleanup is the host's
    (tmp_path / "stub.mjs").write_text(stub, encoding="utf-8")
    run = tmp_path / "run.mjs"
    run.write_text(
        "const seen = [];\n"
        "globalThis.window = new EventTarget();\n"
        'const { default: call } = await import("./stub.mjs");\n'
        'const cleanup = call({ data: "first" });\n'
        f"window.encoderExplorerHosts = {{ {json.dumps(host)}: (c) => {{\n"
        '  seen.push(c.data); return () => seen.push("gone"); } };\n'
        'window.dispatchEvent(new Event("encoder-explorer-hosts"));\n'
        'call({ data: "second" });\n'
        "cleanup();\n"
        "console.log(JSON.stringify(seen));\n",
        encoding="utf-8",
    )
    ran = subprocess.run([node, str(run)], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == ["first", "second", "gone"]


def read_in_node(node: str, tmp_path: Path, data: bytes) -> dict:
    """read_payload.mjs's reading of `data`: {"aligned": ..., "odd": ...}."""
    module, payload_file = tmp_path / "explorer.mjs", tmp_path / "payload.bin"
    module.write_text(joined("explorer/payload.js"), encoding="utf-8")
    payload_file.write_bytes(data)
    done = subprocess.run(
        [node, str(READER), str(module), str(payload_file)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_explorer_reads_back_both_setups_and_the_header(node, tmp_path) -> None:
    tokens = ["[CLS]", "the", "cat", "😴", "שלום", '<b>"x"</b>', "[SEP]"]
    attention = {"A": softmax_attention(2, 3, 7, seed=1), "B": softmax_attention(2, 3, 7, seed=2)}
    setups = [build_setup(w, tokens, name=k, layer_labels=(3, 5)) for k, w in attention.items()]
    data = with_start(encode(setups, stretch=True), start_at(1, 2, "matrix", query=4))
    read = read_in_node(node, tmp_path, data)
    for copy in (read["aligned"], read["odd"]):
        assert copy["stretch"] is True
        assert copy["start"] == {"layer": 1, "head": 2, "mode": "matrix", "query": 4}
        assert [setup["name"] for setup in copy["setups"]] == ["A", "B"]
        for setup in copy["setups"]:
            shape = (setup["layers"], setup["heads"], setup["n"], setup["layerLabels"])
            assert shape == (2, 3, 7, [3, 5]) and setup["tokens"] == tokens
            assert setup["tiles"] is None
            heads = [(head["layer"], head["head"]) for head in setup["full"]]
            assert heads == [(layer, head) for layer in range(2) for head in range(3)]
            weights = attention[setup["name"]].numpy()
            for head in setup["full"]:
                expected = weights[head["layer"], head["head"]]
                np.testing.assert_allclose(head["weights"], expected, rtol=0, atol=QUANTUM)


def test_the_explorer_reads_back_a_long_inputs_chosen_head_and_every_heads_blocks(
    node, tmp_path
) -> None:
    layers, heads, n = 4, 8, 200  # too many for every head in full: blocks and the chosen head
    attention = softmax_attention(layers, heads, n, seed=3)
    data = encode([build_setup(attention, [f"t{i}" for i in range(n)], chosen=((2, 5),))])
    starts, blocks = block_tiles(attention.numpy(), tile_side(layers, heads, n))
    read = read_in_node(node, tmp_path, data)
    for copy in (read["aligned"], read["odd"]):
        (setup,) = copy["setups"]
        assert [(head["layer"], head["head"]) for head in setup["full"]] == [(2, 5)]
        full = setup["full"][0]["weights"]
        np.testing.assert_allclose(full, attention[2, 5].numpy(), rtol=0, atol=QUANTUM)
        assert setup["tiles"]["starts"] == starts.tolist() and len(starts) < n
        np.testing.assert_allclose(setup["tiles"]["weights"], blocks, rtol=0, atol=QUANTUM)


def readings_of(layers: int, heads: int, n: int, seed: int):
    """Value norms [layers, heads, n] and a rollout [layers, n, n] to send: random, in range."""
    generator = np.random.default_rng(seed)
    norms = generator.uniform(0.0, 30.0, (layers, heads, n)).astype(np.float32)
    rows = generator.uniform(0.0, 1.0, (layers, n, n))
    return norms, (rows / rows.sum(-1, keepdims=True)).astype(np.float32)


def test_the_explorer_reads_what_each_head_moves_and_the_rollout_of_every_layer(
    node, tmp_path
) -> None:
    layers, heads, n = 2, 3, 7
    attention = softmax_attention(layers, heads, n, seed=4).numpy()
    norms, rolled = readings_of(layers, heads, n, seed=5)
    setup = build_setup(attention, [f"t{i}" for i in range(n)], norms=norms, rollout=rolled)
    data = with_large_text(encode([setup]))
    moved = attention * norms[:, :, None, :]  # [layer, head, query, key]: as moves does
    python_moved, python_rolled = decode_readings(data)
    for (layer, head), matrix in python_moved.items():
        np.testing.assert_allclose(matrix, moved[layer, head], rtol=1e-4, atol=30 * QUANTUM)
    assert sorted(python_rolled) == [0, 1]
    read = read_in_node(node, tmp_path, data)
    for copy in (read["aligned"], read["odd"]):
        assert copy["largeText"] is True
        (setup,) = copy["setups"]
        for head in setup["full"]:
            expected = moved[head["layer"], head["head"]]
            np.testing.assert_allclose(head["moved"], expected, rtol=1e-4, atol=30 * QUANTUM)
        for layer, found in enumerate(setup["rollout"]):
            assert found["layer"] == layer
            np.testing.assert_allclose(found["weights"], rolled[layer], rtol=0, atol=QUANTUM)


def test_a_long_input_sends_its_chosen_heads_norms_and_the_last_layers_rollout(
    node, tmp_path
) -> None:
    layers, heads, n = 4, 8, 300  # past FULL_BYTES and ROLLOUT_BYTES
    attention = softmax_attention(layers, heads, n, seed=6).numpy()
    norms, rolled = readings_of(layers, heads, n, seed=7)
    tokens = [f"t{i}" for i in range(n)]
    setup = build_setup(attention, tokens, chosen=((2, 5),), norms=norms, rollout=rolled)
    assert setup.norms.shape == (1, n) and setup.rollout_layers == (layers - 1,)
    (setup,) = read_in_node(node, tmp_path, encode([setup]))["odd"]["setups"]
    (head,) = setup["full"]
    np.testing.assert_allclose(head["moved"], attention[2, 5] * norms[2, 5][None, :], rtol=1e-4,
                               atol=30 * QUANTUM)  # fmt: skip
    for found in setup["rollout"]:  # every layer asks; the last one's is drawn
        assert found["layer"] == layers - 1
        np.testing.assert_allclose(found["weights"], rolled[-1], rtol=0, atol=QUANTUM)


@pytest.mark.parametrize(
    ("norms", "rollout", "said"),
    [
        (np.ones((2, 3, 6)), None, "value norms need the shape (2, 3, 7); got (2, 3, 6)"),
        (-np.ones((2, 3, 7)), None, "the value norms lie outside [0, inf]"),
        (None, np.full((2, 7, 7), np.nan), "the rollout hold NaN or infinity"),
        (None, np.full((2, 7, 7), 2.0), "the rollout lie outside [0, 1.0001]"),
    ],
)
def test_readings_that_cannot_be_drawn_are_refused_with_their_shapes_or_values(
    norms, rollout, said
) -> None:
    attention = softmax_attention(2, 3, 7, seed=8)
    with pytest.raises(ValueError, match=re.escape(said)):
        build_setup(attention, [f"t{i}" for i in range(7)], norms=norms, rollout=rollout)
