"""Runs an ONNX model with onnxruntime on one .npy input and saves the first
output as float32 .npy: the independent runtime the ONNX export tests compare
DeepCanvas against. Usage: ort_run.py MODEL.onnx X.npy Y.npy"""
import sys

import numpy as np
import onnxruntime as ort

model, x_path, y_path = sys.argv[1:4]
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
x = np.load(x_path)
y = session.run(None, {session.get_inputs()[0].name: x})[0]
np.save(y_path, np.ascontiguousarray(y, dtype=np.float32))
