#include "CFuzzerDriver.h"

#include <stdlib.h>

// Provided by libclang_rt.fuzzer, which `-sanitize=fuzzer` links.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test_one_input)(const uint8_t *data, size_t size));

void cfuzzer_run(int argc, char **argv, cfuzzer_test_one_input test_one_input) {
    exit(LLVMFuzzerRunDriver(&argc, &argv, test_one_input));
}
