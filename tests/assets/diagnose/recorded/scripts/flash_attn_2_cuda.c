/* Stands in for an extension built against another torch: it calls a c10 symbol the installed torch lacks. */
extern void _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib(int, const char *, const char *, int, _Bool);
void *PyInit_flash_attn_2_cuda(void) { _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib(0, 0, 0, 0, 0); return 0; }
