"""What sharing host memory saves: numpy <-> CPU tensors in place against copies, in one run.

For each size, the best of 5 repeats (timeit) of:
  from_dlpack(a)              a tensor over numpy's memory (phx_tensor_create_from_host)
  from_dlpack(a, copy=True)   a tensor holding a copy (phx_tensor_create + upload)
  np.asarray(t)               numpy's view of the tensor (phx_tensor_host_data)
  t.numpy()                   a copy (phx_tensor_download)
Prints each time and the copy's time as a multiple of the shared one's.

    PYTHONPATH=build/python python3 bench/python_host_memory.py
"""

import timeit

import numpy as np

import phynexus

SIZES_MIB = (0.004, 1, 64)


def best_us(call, number):
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6


def main():
    device = phynexus.device("cpu")
    print(f"{'MiB':>8} {'from_dlpack':>12} {'copy=True':>12} {'ratio':>7} "
          f"{'asarray':>10} {'numpy()':>10} {'ratio':>7}   (us)")
    for mib in SIZES_MIB:
        array = np.ones(max(1, int(mib * 2**20 / 4)), dtype=np.float32)
        number = 2000 if mib < 1 else (200 if mib < 16 else 10)
        shared = best_us(lambda: phynexus.from_dlpack(array, device=device), number)
        copied = best_us(lambda: phynexus.from_dlpack(array, device=device, copy=True), number)
        tensor = phynexus.tensor(array, device=device)
        view = best_us(lambda: np.asarray(tensor), number)
        download = best_us(tensor.numpy, number)
        print(f"{mib:8.3f} {shared:12.2f} {copied:12.2f} {copied / shared:7.1f} "
              f"{view:10.2f} {download:10.2f} {download / view:7.1f}")


if __name__ == "__main__":
    main()
