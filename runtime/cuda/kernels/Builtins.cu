// The CUDA backend's own kernels (runtime/cuda/CudaDevice.h): gradient
// accumulation and scaling of f32 buffers. Each is launched on 1-D blocks
// of 256 threads over any grid (grid-stride loops), so every element is
// covered whatever the grid; results do not depend on the launch.

extern "C" __global__ void __launch_bounds__(256)
strata_accumulate(float *acc, const float *x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    acc[i] += x[i];
}

extern "C" __global__ void __launch_bounds__(256)
strata_scale(float *x, long long n, float factor) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    x[i] *= factor;
}
