/* Host code compiled by gcc in the same target as the offload code: it must get none of the
 * package's clang options (gcc refuses -fpass-plugin=). */
int host_only_answer(void) { return 42; }
