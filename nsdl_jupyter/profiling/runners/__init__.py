"""The runner scripts that execute on a target (this machine's child process or a GPU box over
SSH), deployed side by side as plain files and run as `python3 <runner> REQUEST.json`.

They import only the standard library, numpy and the runtime modules (onnxruntime, tensorrt,
tensorrt_rtx, cupti, pynvml), never nsdl_jupyter: a test holds that line. The kernel loads
their pure parts by path where it needs them; `nsdl_jupyter._runner_files` names their paths.
"""

from __future__ import annotations
