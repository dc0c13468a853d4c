"""The `nsdl` command, run as a real process (the installed console script), and its
dispatcher's extension point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

from nsdl_jupyter import cli
from nsdl_jupyter.examples import small_transformer


def _nsdl() -> list[str]:
    script = Path(sys.executable).with_name("nsdl")
    if script.exists():
        return [str(script)]
    found = shutil.which("nsdl")
    return [found] if found else [sys.executable, "-m", "nsdl_jupyter.cli"]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_nsdl(), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "small.onnx"
    onnx.save(small_transformer(), str(path))
    return path


def test_help_lists_the_subcommands() -> None:
    result = _run("--help")
    assert result.returncode == 0
    for name in ("fp16", "opset", "sanitize", "extract", "tensors", "tools"):
        assert name in result.stdout


def test_fp16_and_sanitize_write_models_that_run(model: Path, tmp_path: Path) -> None:
    fp16 = _run("fp16", str(model), "-o", str(tmp_path / "h.onnx"), "--keep-io-types")
    assert fp16.returncode == 0, fp16.stderr
    assert "convert_to_fp16: ok" in fp16.stdout
    clean = _run("sanitize", str(model), "-o", str(tmp_path / "s.onnx"), "--passes", "2")
    assert clean.returncode == 0, clean.stderr
    assert "folded" in clean.stdout and "passes=2" in clean.stdout
    for name in ("h.onnx", "s.onnx"):
        ort.InferenceSession(str(tmp_path / name), providers=["CPUExecutionProvider"])


def test_fp16_validates_by_default_and_opset_converts(model: Path, tmp_path: Path) -> None:
    fp16 = _run("fp16", str(model), "-o", str(tmp_path / "h.onnx"), "--tolerance", "0.05")
    assert fp16.returncode == 0, fp16.stderr
    assert "validation_rounds=1" in fp16.stdout and "validation: output" in fp16.stdout
    unchecked = _run("fp16", str(model), "-o", str(tmp_path / "u.onnx"), "--no-validate")
    assert unchecked.returncode == 0 and "validation" not in unchecked.stdout
    opset = _run("opset", str(model), "-o", str(tmp_path / "o.onnx"), "--target", "21")
    assert opset.returncode == 0, opset.stderr
    assert "convert_opset: ok" in opset.stdout and "validation: output" in opset.stdout
    imports = {o.domain: o.version for o in onnx.load(str(tmp_path / "o.onnx")).opset_import}
    assert imports[""] == 21
    bad = _run("opset", str(model), "-o", str(tmp_path / "x.onnx"), "--target", "999")
    assert bad.returncode == 2 and "target opset must be an int from 1 to" in bad.stderr


def test_extract_function_and_errors(tmp_path: Path) -> None:
    source = tmp_path / "fn.onnx"
    ir.save(
        ir.from_onnx_text(
            """<ir_version: 8, opset_import: ["": 18, "local": 1]>
            g (float[3] x) => (float[3] y) { y = local.double(x) }
            <domain: "local", opset_import: ["": 18]>
            double (a) => (b) { b = Add(a, a) }"""
        ),
        source,
    )
    out = tmp_path / "double.onnx"
    done = _run("extract", str(source), "-o", str(out), "--function", "double")
    assert done.returncode == 0, done.stderr
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (b,) = session.run(None, {"a": np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(b, [2, 4, 6])
    missing = _run(
        "extract", str(source), "-o", str(tmp_path / "triple.onnx"), "--function", "triple"
    )
    assert missing.returncode == 2
    assert "nsdl extract: error: no local function 'triple'" in missing.stderr
    absent = _run("sanitize", str(tmp_path / "absent.onnx"), "-o", str(tmp_path / "o.onnx"))
    assert absent.returncode == 2 and "does not exist" in absent.stderr


def test_tensors_list_preview_and_convert(model: Path, tmp_path: Path) -> None:
    listing = _run("tensors", str(model), "--dtype", "float32")
    assert listing.returncode == 0
    assert "embeddings.word_embeddings.weight\tinitializer\tfloat\t1000x64" in listing.stdout
    preview = _run(
        "tensors",
        str(model),
        "--convert",
        "embeddings.word_embeddings.weight",
        "--to",
        "float16",
        "--preview",
    )
    assert "precision loss" in preview.stdout
    out = tmp_path / "converted.onnx"
    converted = _run(
        "tensors",
        str(model),
        "--convert",
        "embeddings.word_embeddings.weight",
        "--to",
        "float16",
        "-o",
        str(out),
    )
    assert converted.returncode == 0, converted.stderr
    weights = {t.name: t for t in onnx.load(str(out)).graph.initializer}
    assert weights["embeddings.word_embeddings.weight"].data_type == onnx.TensorProto.FLOAT16


def test_tools_add_list_run_remove(model: Path, tmp_path: Path) -> None:
    env = {"NSDL_CONFIG_DIR": str(tmp_path / "config")}
    script = tmp_path / "copy.py"
    script.write_text("import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2]); print('done')")
    added = _run("tools", "add", "copy", sys.executable, str(script), "$Model", "$Output", env=env)
    assert added.returncode == 0, added.stderr
    listed = _run("tools", "list", env=env)
    assert f"copy: {sys.executable} {script} $Model $Output" in listed.stdout
    out = tmp_path / "copied.onnx"
    ran = _run("tools", "run", "copy", str(model), "-o", str(out), env=env)
    assert ran.returncode == 0, ran.stderr
    assert "done" in ran.stdout and out.exists()
    ghost = _run("tools", "add", "ghost", "no-such-program-xyz", "$Model", env=env)
    assert ghost.returncode == 2 and "was not found on PATH" in ghost.stderr
    assert _run("tools", "remove", "copy", env=env).returncode == 0
    assert "copy" not in _run("tools", "list", env=env).stdout


def test_dispatcher_takes_new_subcommands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another part adds a subcommand with one COMMANDS line and an object in its module."""

    class Hello:
        def add_arguments(self, parser: object) -> None:
            parser.add_argument("who")  # type: ignore[attr-defined]

        def run(self, args: object) -> int:
            print(f"hello {args.who}")  # type: ignore[attr-defined]
            return 7

    module = types.ModuleType("nsdl_test_hello")
    module.HELLO = Hello()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nsdl_test_hello", module)
    monkeypatch.setitem(cli.COMMANDS, "hello", cli.Entry("say hello", "nsdl_test_hello:HELLO"))
    assert cli.main(["hello", "world"]) == 7
    assert capsys.readouterr().out == "hello world\n"
