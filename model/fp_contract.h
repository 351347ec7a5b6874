// LLMSERVE_FP_CONTRACT_OFF: for functions whose float results must equal a scalar
// reference bit for bit, so no multiply and add may be fused into an FMA (which rounds
// once). GCC: the optimize attribute. Clang has no such attribute: a file using the macro
// also says `#pragma clang fp contract(off)` (under __clang__), which covers the file.
#pragma once

#if defined(__clang__)
#define LLMSERVE_FP_CONTRACT_OFF
#else
#define LLMSERVE_FP_CONTRACT_OFF __attribute__((optimize("fp-contract=off")))
#endif
