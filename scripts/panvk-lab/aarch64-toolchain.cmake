# CMake toolchain: cross-build for aarch64 against the panvk lab sysroot.
# Compilers are Debian 12's cross gcc (its own arm64 glibc 2.36 headers and
# libraries); only Vulkan comes from the lab sysroot (see cross-build-llama.sh).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# libvulkan.so.1 from the trixie sysroot references glibc 2.38 symbols; they
# resolve at run time inside the sysroot (qemu's library prefix).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--allow-shlib-undefined")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,--allow-shlib-undefined")
