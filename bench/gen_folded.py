"""Write a large synthetic folded file: deep Python + native stacks, the shape
of a real merged ember profile.  Deterministic.
usage: gen_folded.py OUT [LINES=200000] [TARGET_MB=100]"""
import random
import sys

out = sys.argv[1]
lines = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
target = (int(sys.argv[3]) if len(sys.argv) > 3 else 100) * 1000000
rnd = random.Random(42)
mods = ["app/models/%s.py" % w for w in ("resnet", "vit", "bert", "unet", "yolo", "detr")] + \
    ["torch/nn/modules/%s.py" % w for w in ("module", "conv", "linear", "activation", "container")]
py = ["%s (%s:%d)" % (f, rnd.choice(mods), rnd.randint(1, 900))
      for f in ["forward", "_call_impl", "run_batch", "step", "train_epoch", "evaluate", "loss_fn",
                "collate", "__getitem__", "preprocess", "augment", "backward_hook", "apply", "main",
                "<module>", "<listcomp>", "<lambda>", "Trainer.fit", "Model.forward", "Block.forward"]
      for _ in range(40)]
native = ["_PyEval_EvalFrameDefault", "_PyFunction_Vectorcall", "PyObject_Call", "method_vectorcall",
          "at::native::conv2d", "at::native::addmm", "at::_ops::linear::call", "c10::impl::wrap_kernel",
          "mkldnn_sgemm", "dnnl::impl::cpu::x64::jit_avx512_core_gemm", "cv::GaussianBlur", "cv::resize",
          "cv::hlineSmooth<unsigned char>", "__memmove_avx_unaligned_erms", "dgemm_kernel_SKYLAKEX",
          "std::vector<float>::_M_realloc_insert", "pthread_cond_wait", "start_thread", "clone3"]
native = ["%s_%d" % (n, i) for n in native for i in range(30)]
base = ["_start", "__libc_start_main", "Py_BytesMain", "Py_RunMain", "pymain_run_python",
        "PyRun_SimpleFileExFlags", "run_mod", "PyEval_EvalCode"]
per_line = target // lines
with open(out, "w") as f:
    for i in range(lines):
        stack = list(base)
        size = sum(len(x) + 1 for x in stack)
        # frames until the line reaches its share of the target size
        while size < per_line - 8:
            frame = rnd.choice(py) if rnd.random() < 0.6 else rnd.choice(native)
            stack.append(frame)
            size += len(frame) + 1
        f.write(";".join(stack) + " %d\n" % rnd.randint(1, 50))
