#!/bin/sh
# `make compare-demo`: profile a small PyTorch model in FP32 and dynamically
# quantized to INT8, then compare the two runs.
set -eu
build=${1:-build}
py=/usr/bin/python3
mkdir -p out
"$py" -c "import torch" 2>/dev/null || { echo "compare-demo needs python3-torch (make deps)" >&2; exit 1; }
echo "== FP32"
"$build/ember" record -F 499 -q -o out/fp32.ember -o out/fp32.svg -- "$py" examples/python/torch_inference.py --batches 150
echo "== INT8 (torch.quantization.quantize_dynamic)"
"$build/ember" record -F 499 -q -o out/int8.ember -o out/int8.svg -- "$py" examples/python/torch_inference.py --batches 150 --int8
echo "== ember diff out/fp32.ember out/int8.ember"
"$build/ember" diff out/fp32.ember out/int8.ember --top 15 \
	-o out/fp32-vs-int8.svg -o out/fp32-vs-int8.md -o out/fp32-vs-int8.csv
echo
echo "Open out/fp32-vs-int8.svg (red grew, blue shrank; widths from INT8) and read out/fp32-vs-int8.md."
