#pragma once
// Compute devices: parsing "--device cpu|cuda|cuda:N", finding the CUDA
// plugin and asking it which GPUs exist. The engine never links CUDA; the
// plugin (libdeepcanvas-cuda.so) is opened with dlopen on first use, so the
// same binary runs on machines with no NVIDIA driver.
#include <deepcanvas/backend.h>
#include <deepcanvas/device_spec.h>

#include <string>
#include <vector>

namespace dc {

// DeviceSpec, parse_device() and cuda_plugin_candidates() are device_spec.h's (core).

// The loaded CUDA backend, or null with the reason in *why_not ("no NVIDIA
// driver (libcuda.so.1 not found)", "the CUDA plugin was not found (looked
// in ...)", "no CUDA device", "driver too old ..."). Loads once per process.
DeviceBackend* cuda_backend(std::string* why_not = nullptr);

// The GPUs the plugin sees (empty, with the reason, when CUDA is unavailable).
std::vector<GpuInfo> list_gpus(std::string* why_not = nullptr);

// Throws DeviceError with the reason when spec asks for a GPU that cannot
// be used; returns the backend (null for cpu).
DeviceBackend* require_device(const DeviceSpec& spec);

// For --version: "on, 1 GPU" or "off, <why>", where why says whether the
// plugin is missing or the machine lacks a driver or a GPU. A run-time fact:
// the plugin is a separate package, so the build alone does not decide it.
std::string cuda_status();

}  // namespace dc
