/*
 * spill_harness: create one compute pipeline from a SPIR-V file, print the
 * driver's executable statistics (VK_KHR_pipeline_executable_properties:
 * registers, spills, fills, ...), record dispatches into command buffers, end
 * them, and print which buffer objects the driver allocated for that (with
 * the bolog preload: TLS at vkEndCommandBuffer, WLS per dispatch).
 *
 *   spill_harness SHADER.spv [--local X,Y,Z] [--groups X,Y,Z]... [--spec ID=VAL]...
 *                 [--dispatches N] [--cmdbufs N] [--submit] [--rerecord K]
 *
 * --submit submits every command buffer (one vkQueueSubmit each, in order)
 * after all of them are ended: a driver that sizes scratch at submit time
 * (rvl's patched panvk) allocates it there (BO phase "submit.I").
 * --rerecord K then resets each command buffer and records and ends it again,
 * K times (phase "rerecord.I"; submitted again with --submit): what the
 * command pool's BO recycling does for reset-and-record-again patterns.
 * "live.NAME=bytes" lines give the driver's live BO total at each step.
 * --respec ID=VAL compiles a second pipeline with that constant changed and
 * uses it for every --groups shape after the first.
 * --no-robust leaves robustBufferAccess off (every other feature the device has
 * is enabled): rvl's own device does not enable it, and with it on Mesa adds
 * bounds checks to every buffer access, so the compiled code differs.
 *
 * Each --groups shape (default 1,1,1) gets its own command buffer(s), so one
 * compile answers several dispatch shapes (BO phases "record.I", "end.I").
 *
 * --spec VAL is a 32-bit integer (decimal or 0x..), or f:FLOAT for a float
 * constant. --local sets the workgroup size through the shader's
 * specialization constants (local_size_x_id & co); a shader with a literal
 * workgroup size must be given that same size or none.
 *
 * Output: "key=value" lines (stable, parsed by spill-report.sh); errors go
 * to stderr with exit status 2 (usage), 3 (bad shader) or 4 (Vulkan).
 * Descriptor bindings are read from the SPIR-V (storage/uniform buffers only;
 * a shader using images or samplers is rejected).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vulkan/vulkan.h>

#define MAX_IDS_GUARD (1u << 22)
#define MAX_SPECS 64
#define MAX_BINDINGS 64

static void fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("spill_harness: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

#define VKC(call)                                                                  \
    do {                                                                           \
        VkResult r_ = (call);                                                      \
        if (r_ != VK_SUCCESS)                                                      \
            fail(4, "%s failed: VkResult %d", #call, (int)r_);                   \
    } while (0)

/* ---------------- SPIR-V reflection (just what a compute layout needs) ---- */

struct binding {
    uint32_t set, binding;
    VkDescriptorType type;
};

struct shader_info {
    uint32_t *words;
    size_t nwords;
    char entry[64];
    uint32_t local[3];          /* literal LocalSize, 0 if absent */
    int64_t local_spec[3];      /* spec id per component, -1 if literal/absent */
    int has_push_constants;
    struct binding bindings[MAX_BINDINGS];
    int nbindings;
};

enum { OP_ENTRY_POINT = 15, OP_EXEC_MODE = 16, OP_TYPE_POINTER = 32, OP_VARIABLE = 59,
       OP_DECORATE = 71, OP_SPEC_CONST_COMPOSITE = 51, OP_TYPE_ARRAY = 28,
       OP_TYPE_RUNTIME_ARRAY = 29, OP_TYPE_STRUCT = 30, OP_EXEC_MODE_ID = 331 };
enum { DEC_SPEC_ID = 1, DEC_BLOCK = 2, DEC_BUFFER_BLOCK = 3, DEC_BUILTIN = 11,
       DEC_BINDING = 33, DEC_SET = 34 };
enum { SC_UNIFORM_CONSTANT = 0, SC_UNIFORM = 2, SC_PUSH_CONSTANT = 9, SC_STORAGE_BUFFER = 12 };
enum { BUILTIN_WORKGROUP_SIZE = 25, EXEC_LOCAL_SIZE = 17, EXEC_LOCAL_SIZE_ID = 38 };

static void reflect(struct shader_info *si)
{
    uint32_t *w = si->words;
    size_t n = si->nwords;
    if (n < 5 || w[0] != 0x07230203)
        fail(3, "not a SPIR-V module (bad magic number)");
    uint32_t bound = w[3];
    if (bound == 0 || bound > MAX_IDS_GUARD)
        fail(3, "SPIR-V id bound %u is out of range", bound);

    int64_t *spec_id = malloc(bound * sizeof(int64_t));
    int64_t *set = malloc(bound * sizeof(int64_t));
    int64_t *bind = malloc(bound * sizeof(int64_t));
    uint8_t *block = calloc(bound, 1); /* 1 Block, 2 BufferBlock */
    uint32_t *ptr_sc = calloc(bound, sizeof(uint32_t));
    uint32_t *ptr_pointee = calloc(bound, sizeof(uint32_t));
    uint32_t *elem = calloc(bound, sizeof(uint32_t)); /* array element type */
    if (!spec_id || !set || !bind || !block || !ptr_sc || !ptr_pointee || !elem)
        fail(3, "out of memory reflecting the shader");
    for (uint32_t i = 0; i < bound; i++)
        spec_id[i] = set[i] = bind[i] = -1;
    uint32_t wg_builtin = 0;
    int64_t local_size_id[3] = {-1, -1, -1};
    si->local_spec[0] = si->local_spec[1] = si->local_spec[2] = -1;

    /* pass 1: decorations, types, entry point, execution modes */
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffff, len = w[i] >> 16;
        if (len == 0 || i + len > n)
            fail(3, "truncated SPIR-V instruction at word %zu", i);
        uint32_t *a = &w[i + 1];
        if (op == OP_ENTRY_POINT && len >= 4 && !si->entry[0]) {
            if (a[0] != 5)
                fail(3, "entry point is not a compute shader (execution model %u)", a[0]);
            snprintf(si->entry, sizeof si->entry, "%s", (const char *)&a[2]);
        } else if (op == OP_EXEC_MODE && len >= 6 && a[1] == EXEC_LOCAL_SIZE) {
            si->local[0] = a[2]; si->local[1] = a[3]; si->local[2] = a[4];
        } else if (op == OP_EXEC_MODE_ID && len >= 6 && a[1] == EXEC_LOCAL_SIZE_ID) {
            for (int k = 0; k < 3; k++) local_size_id[k] = a[2 + k];
        } else if (op == OP_DECORATE && len >= 3 && a[0] < bound) {
            uint32_t id = a[0], d = a[1];
            if (d == DEC_SPEC_ID && len >= 4) spec_id[id] = a[2];
            else if (d == DEC_SET && len >= 4) set[id] = a[2];
            else if (d == DEC_BINDING && len >= 4) bind[id] = a[2];
            else if (d == DEC_BLOCK) block[id] = 1;
            else if (d == DEC_BUFFER_BLOCK) block[id] = 2;
            else if (d == DEC_BUILTIN && len >= 4 && a[2] == BUILTIN_WORKGROUP_SIZE) wg_builtin = id;
        } else if (op == OP_TYPE_POINTER && len >= 4 && a[0] < bound) {
            ptr_sc[a[0]] = a[1];
            ptr_pointee[a[0]] = a[2];
        } else if ((op == OP_TYPE_ARRAY || op == OP_TYPE_RUNTIME_ARRAY) && len >= 3 && a[0] < bound) {
            elem[a[0]] = a[1];
        }
        i += len;
    }
    if (!si->entry[0])
        fail(3, "no OpEntryPoint in the module");

    /* pass 2: variables and the workgroup-size spec composite */
    for (size_t i = 5; i < n;) {
        uint32_t op = w[i] & 0xffff, len = w[i] >> 16;
        uint32_t *a = &w[i + 1];
        if (op == OP_SPEC_CONST_COMPOSITE && len >= 6 && a[1] == wg_builtin && wg_builtin) {
            for (int k = 0; k < 3; k++)
                if (a[2 + k] < bound)
                    si->local_spec[k] = spec_id[a[2 + k]];
        } else if (op == OP_VARIABLE && len >= 4 && a[1] < bound && a[0] < bound) {
            uint32_t var = a[1], sc = a[2], ptype = a[0];
            if (sc == SC_PUSH_CONSTANT) {
                si->has_push_constants = 1;
            } else if (sc == SC_STORAGE_BUFFER || sc == SC_UNIFORM || sc == SC_UNIFORM_CONSTANT) {
                if (sc == SC_UNIFORM_CONSTANT)
                    fail(3, "variable %%%u uses images/samplers, which the harness does not bind", var);
                if (set[var] < 0 || bind[var] < 0)
                    fail(3, "resource variable %%%u has no DescriptorSet/Binding", var);
                uint32_t t = ptr_pointee[ptype];
                while (t < bound && elem[t]) t = elem[t];
                VkDescriptorType type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
                if (sc == SC_UNIFORM && t < bound && block[t] == 1)
                    type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
                int dup = 0;
                for (int b = 0; b < si->nbindings; b++)
                    if (si->bindings[b].set == set[var] && si->bindings[b].binding == bind[var])
                        dup = 1;
                if (!dup) {
                    if (si->nbindings == MAX_BINDINGS)
                        fail(3, "more than %d descriptor bindings", MAX_BINDINGS);
                    si->bindings[si->nbindings++] =
                        (struct binding){(uint32_t)set[var], (uint32_t)bind[var], type};
                }
            }
        }
        i += len;
    }
    for (int k = 0; k < 3; k++)
        if (si->local_spec[k] < 0 && local_size_id[k] >= 0 && local_size_id[k] < bound)
            si->local_spec[k] = spec_id[local_size_id[k]];
    free(spec_id); free(set); free(bind); free(block); free(ptr_sc); free(ptr_pointee); free(elem);
}

/* ---------------- arguments ---------------- */

struct spec { uint32_t id; uint32_t value; };

static void parse_triple(const char *flag, const char *s, uint32_t out[3])
{
    char tail;
    if (sscanf(s, "%u,%u,%u%c", &out[0], &out[1], &out[2], &tail) != 3 || !out[0] || !out[1] || !out[2])
        fail(2, "%s expects X,Y,Z (three positive integers), got '%s'", flag, s);
}

static uint32_t parse_u32(const char *flag, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || end == s || v > 0xffffffffull)
        fail(2, "%s expects a 32-bit unsigned integer, got '%s'", flag, s);
    return (uint32_t)v;
}

static struct spec parse_spec(const char *s)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s)
        fail(2, "--spec expects ID=VALUE, got '%s'", s);
    char idbuf[16];
    size_t l = (size_t)(eq - s);
    if (l >= sizeof idbuf)
        fail(2, "--spec id too long in '%s'", s);
    memcpy(idbuf, s, l);
    idbuf[l] = 0;
    struct spec sp = {parse_u32("--spec id", idbuf), 0};
    const char *v = eq + 1;
    if (strncmp(v, "f:", 2) == 0) {
        char *end;
        float f = strtof(v + 2, &end);
        if (*end || end == v + 2)
            fail(2, "--spec float value '%s' is not a number", v + 2);
        memcpy(&sp.value, &f, 4);
    } else {
        sp.value = parse_u32("--spec value", v);
    }
    return sp;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail(3, "cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (sz <= 0 || sz % 4)
        fail(3, "%s: size %ld is not a positive multiple of 4 (not SPIR-V)", path, sz);
    uint8_t *buf = malloc((size_t)sz);
    if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz)
        fail(3, "cannot read %s", path);
    fclose(f);
    *len = (size_t)sz;
    return buf;
}

/* ---------------- bolog hooks (optional) ---------------- */

typedef void (*phase_fn)(const char *);
typedef int (*stats_fn)(const char *, uint64_t *, uint64_t *, uint64_t *, uint64_t *);
static phase_fn bo_phase;
static stats_fn bo_stats;

static void phase(const char *name)
{
    if (bo_phase)
        bo_phase(name);
}

static void print_phase(const char *name)
{
    uint64_t count = 0, bytes = 0, largest = 0, failures = 0;
    if (bo_stats)
        bo_stats(name, &count, &bytes, &largest, &failures);
    if (bo_stats)
        printf("bo.%s.count=%llu\nbo.%s.bytes=%llu\nbo.%s.largest=%llu\nbo.%s.failures=%llu\n", name,
               (unsigned long long)count, name, (unsigned long long)bytes, name,
               (unsigned long long)largest, name, (unsigned long long)failures);
}

static void print_live(const char *name)
{
    void (*totals)(uint64_t *, uint64_t *, uint64_t *, uint64_t *) =
        (void (*)(uint64_t *, uint64_t *, uint64_t *, uint64_t *))dlsym(RTLD_DEFAULT, "bolog_totals");
    if (!totals)
        return;
    uint64_t live, peak, count, failures;
    totals(&live, &peak, &count, &failures);
    printf("live.%s=%llu\n", name, (unsigned long long)live);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_value(const char *name, VkPipelineExecutableStatisticKHR *s)
{
    printf("stat.");
    for (const char *c = name; *c; c++)
        putchar((*c == ' ' || *c == '=') ? '_' : *c);
    switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: printf("=%u\n", s->value.b32); break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: printf("=%lld\n", (long long)s->value.i64); break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: printf("=%llu\n", (unsigned long long)s->value.u64); break;
    default: printf("=%g\n", s->value.f64); break;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(stderr, "usage: spill_harness SHADER.spv [--local X,Y,Z] [--groups X,Y,Z] "
                        "[--spec ID=VAL|ID=f:FLOAT]... [--dispatches N] [--cmdbufs N] [--submit] [--rerecord K] [--no-robust]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep what was printed if the driver aborts */
    const char *path = argv[1];
    uint32_t local[3] = {0, 0, 0};
    uint32_t groups[16][3];
    uint32_t nshapes = 0;
    int have_local = 0;
    uint32_t dispatches = 1, cmdbufs = 1, rerecord = 0;
    int submit = 0, have_respec = 0, robust = 1;
    struct spec respec = {0, 0};
    struct spec specs[MAX_SPECS];
    int nspecs = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--submit")) { submit = 1; continue; }
        if (!strcmp(a, "--no-robust")) { robust = 0; continue; }
        if (i + 1 >= argc)
            fail(2, "option %s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--local")) { parse_triple(a, v, local); have_local = 1; }
        else if (!strcmp(a, "--groups")) {
            if (nshapes == 16) fail(2, "at most 16 --groups shapes");
            parse_triple(a, v, groups[nshapes++]);
        }
        else if (!strcmp(a, "--dispatches")) dispatches = parse_u32(a, v);
        else if (!strcmp(a, "--rerecord")) rerecord = parse_u32(a, v);
        else if (!strcmp(a, "--respec")) { respec = parse_spec(v); have_respec = 1; }
        else if (!strcmp(a, "--cmdbufs")) cmdbufs = parse_u32(a, v);
        else if (!strcmp(a, "--spec")) {
            if (nspecs == MAX_SPECS) fail(2, "more than %d --spec options", MAX_SPECS);
            specs[nspecs++] = parse_spec(v);
        } else fail(2, "unknown option %s", a);
    }
    if (nshapes == 0) {
        groups[0][0] = groups[0][1] = groups[0][2] = 1;
        nshapes = 1;
    }
    if (rerecord > 64)
        fail(2, "--rerecord must be 0..64");
    if (!dispatches || dispatches > 4096 || !cmdbufs || cmdbufs > 256)
        fail(2, "--dispatches must be 1..4096 and --cmdbufs 1..256");

    struct shader_info si = {0};
    size_t len;
    si.words = (uint32_t *)read_file(path, &len);
    si.nwords = len / 4;
    reflect(&si);

    /* Workgroup size through spec constants, or check against the literal size. */
    if (have_local) {
        for (int k = 0; k < 3; k++) {
            if (si.local_spec[k] >= 0) {
                int overridden = 0;
                for (int s = 0; s < nspecs; s++)
                    if (specs[s].id == (uint32_t)si.local_spec[k]) { specs[s].value = local[k]; overridden = 1; }
                if (!overridden) {
                    if (nspecs == MAX_SPECS) fail(2, "too many spec constants");
                    specs[nspecs++] = (struct spec){(uint32_t)si.local_spec[k], local[k]};
                }
            } else if (si.local[k] && si.local[k] != local[k]) {
                fail(2, "--local component %d is %u but the shader fixes it to %u (no spec id)", k,
                     local[k], si.local[k]);
            }
        }
    }
    printf("shader=%s\nentry=%s\nbindings=%d\n", path, si.entry, si.nbindings);
    for (int k = 0; k < 3; k++) {
        uint32_t eff = si.local[k];
        for (int s = 0; s < nspecs; s++)
            if (si.local_spec[k] >= 0 && specs[s].id == (uint32_t)si.local_spec[k]) eff = specs[s].value;
        printf("local.%c=%u\n", "xyz"[k], eff);
    }
    printf("shapes=%u\n", nshapes);
    for (uint32_t g = 0; g < nshapes; g++)
        printf("groups.%u=%u,%u,%u\n", g, groups[g][0], groups[g][1], groups[g][2]);
    printf("dispatches=%u\ncmdbufs=%u\n", dispatches, cmdbufs);

    bo_phase = (phase_fn)dlsym(RTLD_DEFAULT, "bolog_phase");
    bo_stats = (stats_fn)dlsym(RTLD_DEFAULT, "bolog_phase_stats");
    printf("bolog=%s\n", bo_phase && bo_stats ? "yes" : "no");
    phase("setup");

    /* ---- instance / device ---- */
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance inst;
    VKC(vkCreateInstance(&ici, NULL, &inst));
    uint32_t ndev = 1;
    VkPhysicalDevice pd;
    VkResult er = vkEnumeratePhysicalDevices(inst, &ndev, &pd);
    if ((er != VK_SUCCESS && er != VK_INCOMPLETE) || ndev == 0)
        fail(4, "no Vulkan device (is the DRM shim preloaded?)");
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &drv};
    vkGetPhysicalDeviceProperties2(pd, &props);
    printf("device=%s\ndriver=%s %s\nmax_push_constants=%u\nmax_shared_memory=%u\nmax_invocations=%u\n",
           props.properties.deviceName, drv.driverName, drv.driverInfo,
           props.properties.limits.maxPushConstantsSize,
           props.properties.limits.maxComputeSharedMemorySize,
           props.properties.limits.maxComputeWorkGroupInvocations);

    uint32_t next = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &next, NULL);
    VkExtensionProperties *exts = calloc(next, sizeof *exts);
    vkEnumerateDeviceExtensionProperties(pd, NULL, &next, exts);
    int has_stats = 0;
    for (uint32_t i = 0; i < next; i++)
        if (!strcmp(exts[i].extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME))
            has_stats = 1;
    printf("executable_properties=%s\n", has_stats ? "yes" : "no");

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq, sizeof *qf);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    uint32_t qfi = UINT32_MAX;
    for (uint32_t i = 0; i < nq && qfi == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) qfi = i;
    if (qfi == UINT32_MAX)
        fail(4, "device has no compute queue");
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = qfi, .queueCount = 1, .pQueuePriorities = &prio};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pef = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE};
    /* Enable whatever optional features the device has, like llama.cpp does
     * (fp16/int8/16-bit storage), so shaders that need them are valid. */
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    if (props.properties.apiVersion >= VK_API_VERSION_1_3) {
        f13.pNext = NULL;
        f12.pNext = &f13;
        vkGetPhysicalDeviceFeatures2(pd, &f2);
    }
    if (!robust)
        f2.features.robustBufferAccess = VK_FALSE;
    if (has_stats) {
        pef.pNext = f2.pNext;
        f2.pNext = &pef;
    }
    const char *ext_names[1] = {VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f2,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = has_stats ? 1 : 0, .ppEnabledExtensionNames = ext_names};
    VkDevice dev;
    VKC(vkCreateDevice(pd, &dci, NULL, &dev));

    /* ---- layout from reflection ---- */
    uint32_t nsets = 0;
    for (int b = 0; b < si.nbindings; b++)
        if (si.bindings[b].set + 1 > nsets) nsets = si.bindings[b].set + 1;
    if (nsets > 8)
        fail(3, "shader uses descriptor set %u; the harness handles sets 0..7", nsets - 1);
    VkDescriptorSetLayout dsl[8];
    for (uint32_t s = 0; s < nsets; s++) {
        VkDescriptorSetLayoutBinding lb[MAX_BINDINGS];
        uint32_t nb = 0;
        for (int b = 0; b < si.nbindings; b++)
            if (si.bindings[b].set == s)
                lb[nb++] = (VkDescriptorSetLayoutBinding){si.bindings[b].binding, si.bindings[b].type, 1,
                                                          VK_SHADER_STAGE_COMPUTE_BIT, NULL};
        VkDescriptorSetLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                               .bindingCount = nb, .pBindings = lb};
        VKC(vkCreateDescriptorSetLayout(dev, &lci, NULL, &dsl[s]));
    }
    uint32_t pc_size = props.properties.limits.maxPushConstantsSize;
    if (pc_size > 256) pc_size = 256;
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_size};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = nsets, .pSetLayouts = dsl,
                                       .pushConstantRangeCount = si.has_push_constants ? 1 : 0,
                                       .pPushConstantRanges = &pcr};
    VkPipelineLayout layout;
    VKC(vkCreatePipelineLayout(dev, &plci, NULL, &layout));

    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = len, .pCode = si.words};
    VkShaderModule mod;
    VKC(vkCreateShaderModule(dev, &smci, NULL, &mod));

    VkSpecializationMapEntry map[MAX_SPECS];
    uint32_t data[MAX_SPECS];
    for (int s = 0; s < nspecs; s++) {
        map[s] = (VkSpecializationMapEntry){specs[s].id, (uint32_t)(s * 4), 4};
        data[s] = specs[s].value;
        printf("spec.%u=%u\n", specs[s].id, specs[s].value);
    }
    VkSpecializationInfo spi = {(uint32_t)nspecs, map, (size_t)nspecs * 4, data};
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = has_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = mod, .pName = si.entry,
                  .pSpecializationInfo = nspecs ? &spi : NULL},
        .layout = layout};
    phase("compile");
    fflush(stdout);
    double t0 = now();
    VkPipeline pipe;
    VKC(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, NULL, &pipe));
    printf("compile_seconds=%.1f\n", now() - t0);

    /* --respec ID=VAL: a second pipeline with one specialization constant
     * changed, used by every --groups shape after the first (e.g. a shader
     * that needs more TLS, to make a queue-owned TLS buffer grow). */
    VkPipeline pipe2 = VK_NULL_HANDLE;
    if (have_respec) {
        int found = 0;
        for (int k = 0; k < nspecs; k++)
            if (specs[k].id == respec.id) { data[k] = respec.value; found = 1; }
        if (!found)
            fail(2, "--respec %u: the id must also be given with --spec", respec.id);
        printf("respec.%u=%u\n", respec.id, respec.value);
        double t1 = now();
        VKC(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, NULL, &pipe2));
        printf("compile2_seconds=%.1f\n", now() - t1);
    }

    if (has_stats) {
        PFN_vkGetPipelineExecutablePropertiesKHR gp =
            (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(dev, "vkGetPipelineExecutablePropertiesKHR");
        PFN_vkGetPipelineExecutableStatisticsKHR gs =
            (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR");
        VkPipelineInfoKHR pinfo = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipe};
        uint32_t nexe = 0;
        VKC(gp(dev, &pinfo, &nexe, NULL));
        for (uint32_t e = 0; e < nexe && e < 1; e++) {
            VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                              .pipeline = pipe, .executableIndex = e};
            uint32_t nst = 0;
            VKC(gs(dev, &ei, &nst, NULL));
            VkPipelineExecutableStatisticKHR *st = calloc(nst, sizeof *st);
            for (uint32_t k = 0; k < nst; k++) st[k].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
            VKC(gs(dev, &ei, &nst, st));
            for (uint32_t k = 0; k < nst; k++) print_value(st[k].name, &st[k]);
            free(st);
        }
    }

    /* ---- resources: one small buffer behind every binding (nothing executes) ---- */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 1 << 16,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT};
    VkBuffer buf;
    VKC(vkCreateBuffer(dev, &bci, NULL, &buf));
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(dev, buf, &mr);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = mr.size,
                                .memoryTypeIndex = (uint32_t)__builtin_ctz(mr.memoryTypeBits)};
    VkDeviceMemory mem;
    VKC(vkAllocateMemory(dev, &mai, NULL, &mem));
    VKC(vkBindBufferMemory(dev, buf, mem, 0));
    VkDescriptorPoolSize ps[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, MAX_BINDINGS},
                                  {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, MAX_BINDINGS}};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = 8, .poolSizeCount = 2, .pPoolSizes = ps};
    VkDescriptorPool dpool;
    VKC(vkCreateDescriptorPool(dev, &dpci, NULL, &dpool));
    VkDescriptorSet sets[8];
    if (nsets) {
        VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                            .descriptorPool = dpool, .descriptorSetCount = nsets, .pSetLayouts = dsl};
        VKC(vkAllocateDescriptorSets(dev, &dsai, sets));
    }
    VkDescriptorBufferInfo dbi = {buf, 0, VK_WHOLE_SIZE};
    for (int b = 0; b < si.nbindings; b++) {
        VkWriteDescriptorSet wds = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                    .dstSet = sets[si.bindings[b].set], .dstBinding = si.bindings[b].binding,
                                    .descriptorCount = 1, .descriptorType = si.bindings[b].type,
                                    .pBufferInfo = &dbi};
        vkUpdateDescriptorSets(dev, 1, &wds, 0, NULL);
    }

    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = qfi,
                                   .flags = rerecord ? VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT : 0};
    VkQueue queue;
    vkGetDeviceQueue(dev, qfi, 0, &queue);
    VkCommandPool pool;
    VKC(vkCreateCommandPool(dev, &cpi, NULL, &pool));
    uint32_t ncb = cmdbufs * nshapes;
    VkCommandBuffer *cbs = calloc(ncb, sizeof *cbs);
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                        .commandPool = pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                        .commandBufferCount = ncb};
    VKC(vkAllocateCommandBuffers(dev, &cbai, cbs));
    uint8_t zeros[256] = {0};
    int end_failed = 0;
    uint8_t *cb_ok = calloc(ncb, 1); /* ended successfully: may be submitted */
    uint32_t end_failures = 0;
    char name[32];
    print_live("before_record");
    for (uint32_t g = 0; g < nshapes; g++) {
      for (uint32_t pass = 0; pass <= rerecord; pass++) {
        for (uint32_t c = 0; c < cmdbufs; c++) {
            VkCommandBuffer cb = cbs[g * cmdbufs + c];
            VkCommandBufferBeginInfo cbbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
            if (pass) {
                snprintf(name, sizeof name, "rerecord.%u", g);
                phase(name);
                VKC(vkResetCommandBuffer(cb, 0));
            } else {
                snprintf(name, sizeof name, "record.%u", g);
                phase(name);
            }
            VKC(vkBeginCommandBuffer(cb, &cbbi));
            vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, (g > 0 && pipe2) ? pipe2 : pipe);
            if (nsets)
                vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, nsets, sets, 0, NULL);
            if (si.has_push_constants)
                vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_size, zeros);
            for (uint32_t d = 0; d < dispatches; d++)
                vkCmdDispatch(cb, groups[g][0], groups[g][1], groups[g][2]);
            snprintf(name, sizeof name, pass ? "rerecord.%u" : "end.%u", g);
            phase(name);
            VkResult r = vkEndCommandBuffer(cb);
            if (!pass)
                printf("end_result.%u.%u=%d\n", g, c, (int)r);
            else if (r != VK_SUCCESS)
                printf("rerecord_result.%u.%u.%u=%d\n", g, pass, c, (int)r);
            cb_ok[g * cmdbufs + c] = r == VK_SUCCESS;
            if (r != VK_SUCCESS) {
                end_failed = 1;
                end_failures++;
            }
        }
        snprintf(name, sizeof name, "%s%u.%u", pass ? "rerecorded." : "ended.", g, pass);
        print_live(name);
        if (submit) {
            /* One submit per command buffer, like ggml's graph splits. The
             * shim executes nothing; nothing waits on these. */
            snprintf(name, sizeof name, "submit.%u", g);
            phase(name);
            for (uint32_t c = 0; c < cmdbufs; c++) {
                if (!cb_ok[g * cmdbufs + c])
                    continue; /* invalid after a failed End: not submittable */
                VkSubmitInfo si_ = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                                    .pCommandBuffers = &cbs[g * cmdbufs + c]};
                VkResult r = vkQueueSubmit(queue, 1, &si_, VK_NULL_HANDLE);
                if (r != VK_SUCCESS) {
                    printf("submit_result.%u.%u.%u=%d\n", g, pass, c, (int)r);
                    end_failed = 1;
                }
            }
            snprintf(name, sizeof name, "submitted.%u.%u", g, pass);
            print_live(name);
        }
      }
    }
    phase("done");
    printf("end_failures=%u\n", end_failures);
    print_phase("compile");
    for (uint32_t g = 0; g < nshapes; g++) {
        snprintf(name, sizeof name, "record.%u", g);
        print_phase(name);
        snprintf(name, sizeof name, "end.%u", g);
        print_phase(name);
        if (submit) {
            snprintf(name, sizeof name, "submit.%u", g);
            print_phase(name);
        }
        if (rerecord) {
            snprintf(name, sizeof name, "rerecord.%u", g);
            print_phase(name);
        }
    }
    if (bo_stats) {
        void (*totals)(uint64_t *, uint64_t *, uint64_t *, uint64_t *) =
            (void (*)(uint64_t *, uint64_t *, uint64_t *, uint64_t *))dlsym(RTLD_DEFAULT, "bolog_totals");
        if (totals) {
            uint64_t live, peak, count, failures;
            totals(&live, &peak, &count, &failures);
            printf("bo.live=%llu\nbo.peak=%llu\nbo.count=%llu\nbo.failures=%llu\n", (unsigned long long)live,
                   (unsigned long long)peak, (unsigned long long)count, (unsigned long long)failures);
        }
    }
    fflush(stdout);
    /* The shim has no GPU behind it: nothing waits for submitted work. */
    free(cb_ok);
    vkDestroyCommandPool(dev, pool, NULL);
    vkDestroyPipeline(dev, pipe, NULL);
    if (pipe2)
        vkDestroyPipeline(dev, pipe2, NULL);
    vkDestroyDevice(dev, NULL);
    vkDestroyInstance(inst, NULL);
    return end_failed ? 5 : 0;
}
