"""The export worker: a fork server (zygote) and one forked child per export job.

    zygote.py    `python -m onnxlens.exporter.worker.zygote`: serves jobs over msgpack frames,
                 forks a child per job, relays its events, kills it on cancel and at its deadline
    warmup.py    torch and the ONNX stack imported, one tiny export, the heap frozen
    preload.py   installed libraries finished jobs used, imported in the zygote (never user code)
    child.py     one job in a forked child: faulthandler, memory cap, output drained, the Pipeline
    crashes.py   findings for children that died without a result: timeouts and crashes

The zygote never runs user code and keeps torch at one thread (OpenMP pools do not survive
fork); user code runs only in forked children, which may raise the thread count.
"""
