extern int cudaGetDeviceCount(int *);
void *PyInit__C(void) { int n; cudaGetDeviceCount(&n); return 0; }
