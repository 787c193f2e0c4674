# Sourced by the device bundles (llama-vulkan/device-bundle.sh, side-by-side/bundle.sh).
# copy_vulkan_libs DIR: this machine's Vulkan loader and the glvnd libraries the NVIDIA ICD needs
# (libGLX_nvidia.so.0 gives the loader no vkCreateInstance without libGLX/libEGL/libGLdispatch and
# what they link), for a bare GPU machine that has the driver and its ICD but no loader.
# shellcheck shell=bash
copy_vulkan_libs() {
    local lib=/usr/lib/x86_64-linux-gnu l
    for l in libvulkan.so.1 libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libGL.so.1 libOpenGL.so.0 \
        libX11.so.6 libxcb.so.1 libXau.so.6 libXdmcp.so.6 libXext.so.6 libbsd.so.0 libmd.so.0; do
        cp -L "$lib/$l" "$1/" || {
            printf 'missing %s/%s (apt-get install libvulkan1 libglvnd0 libgl1 libegl1 libglx0 libopengl0)\n' "$lib" "$l" >&2
            return 1
        }
    done
}
