#pragma once
// Every command of deepcanvas-cli, one file each in cli/commands/. main.cpp
// lists them explicitly (usage order) rather than through static
// registration, which a static library or the linker could drop.
#include "../args.h"
#include "../command.h"

namespace dc::cli {

const Command& train_command();
const Command& eval_command();
const Command& predict_command();
const Command& run_command();
const Command& export_command();
const Command& import_command();
const Command& transfer_command();
const Command& summary_command();
const Command& edit_command();
const Command& generate_command();
const Command& lr_find_command();
const Command& batch_fit_command();
const Command& sweep_command();
const Command& devices_command();
const Command& advise_command();
const Command& bench_device_command();

}  // namespace dc::cli
