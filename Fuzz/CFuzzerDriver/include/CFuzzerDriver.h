#ifndef CFUZZERDRIVER_H
#define CFUZZERDRIVER_H

#include <stddef.h>
#include <stdint.h>

/// One fuzz input; returns 0 (libFuzzer reserves other values).
typedef int (*cfuzzer_test_one_input)(const uint8_t *data, size_t size);

/// Runs libFuzzer's driver (LLVMFuzzerRunDriver) with the command line and exits with its status.
/// A fuzz target's `main.swift` calls this instead of defining LLVMFuzzerTestOneInput, so SwiftPM's
/// own entry point (which an executable target must have) stays the program's `main`.
__attribute__((noreturn)) void cfuzzer_run(int argc, char **argv, cfuzzer_test_one_input test_one_input);

#endif
