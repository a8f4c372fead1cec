// The CUDA backend's own kernel (runtime/cuda/CudaDevice.h): scaling of f32
// buffers (the gradients' average over microbatches). It is launched on 1-D
// blocks of 256 threads over any grid (a grid-stride loop), so every element
// is covered whatever the grid; results do not depend on the launch.

extern "C" __global__ void __launch_bounds__(256)
strata_scale(float *x, long long n, float factor) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    x[i] *= factor;
}
