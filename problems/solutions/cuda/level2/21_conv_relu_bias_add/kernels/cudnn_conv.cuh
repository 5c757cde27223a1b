#pragma once
// One cuDNN 2-D convolution over the WHOLE batch (no bias: the caller fuses it into its epilogue),
// stride 1 / dilation 1, NCHW fp32, through cuDNN's graph (backend) API with the execution plan
// built once per shape.
//
// Why not cudnnConvolutionForward: on the H200 (cuDNN 9, torch 2.11) that legacy call spends
// ~150-200 us of host time per call before its kernel starts, the GPU idle meanwhile, where the
// kernel itself takes ~470 us (benchmarks/probe_solution_kernels.py: host per call 211 us for one
// conv + one epilogue launch). A finalized plan runs with one variant pack (the data pointers),
// kept per pointer set, and cudnnBackendExecute.
//
// Which engines: heuristic mode A's list, without any engine whose numerical notes say tensor
// cores (TF32), down-converted inputs, reduced-precision reduction, FFT, Winograd or a
// non-deterministic result: fp32 FMA implicit-GEMM kernels, as exact as the problem's own conv.
// Of those that finalize within the workspace given, the fastest on the first call's own buffers
// (CUDA events, 3 runs each) is kept; static state holds shapes and plans only, never data. Every
// status is checked: a failure returns false and the caller fills its output with NaN (fail.cuh).
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

namespace conv {

inline bool ok(cudnnStatus_t s, const char* what) {
    if (s == CUDNN_STATUS_SUCCESS) return true;
    std::fprintf(stderr, "kagent kernel: cuDNN %s: %s\n", what, cudnnGetErrorString(s));
    return false;
}

inline cudnnHandle_t handle() {
    static cudnnHandle_t h = [] {
        cudnnHandle_t t = nullptr;
        if (!ok(cudnnCreate(&t), "cudnnCreate")) t = nullptr;
        return t;
    }();
    return h;  // on the default stream, the handle's default
}

using Desc = cudnnBackendDescriptor_t;

inline Desc make(cudnnBackendDescriptorType_t type, const char* what) {
    Desc d = nullptr;
    return ok(cudnnBackendCreateDescriptor(type, &d), what) ? d : nullptr;
}

inline bool set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
                const void* value, const char* what) {
    return d != nullptr && ok(cudnnBackendSetAttribute(d, name, type, n, value), what);
}

enum : int64_t { UID_X = 1, UID_W = 2, UID_Y = 3 };

// A 4-d NCHW fp32 tensor descriptor, packed.
inline Desc tensor(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w, int64_t align) {
    Desc t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "create tensor");
    const int64_t dims[4] = {n, c, h, w}, strides[4] = {c * h * w, h * w, w, 1};
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    bool good = set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "tensor dtype") &&
                set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dims") &&
                set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides") &&
                set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid") &&
                set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment") &&
                ok(cudnnBackendFinalize(t), "finalize tensor");
    return good ? t : nullptr;
}

// Engines whose arithmetic is not plain fp32 FMA (or not the same every run) are left out.
inline bool exact_engine(Desc cfg) {
    Desc eng = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "create engine");
    if (eng == nullptr) return false;
    int64_t got = 0;
    bool good = ok(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &eng),
                   "engine of config");
    cudnnBackendNumericalNote_t notes[32];
    int64_t n_notes = 0;
    good = good && ok(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 32,
                                               &n_notes, notes),
                      "engine numerical notes");
    cudnnBackendDestroyDescriptor(eng);
    if (!good) return false;
    for (int64_t i = 0; i < n_notes && i < 32; ++i) {
        switch (notes[i]) {
            case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
            case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
            case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
            case CUDNN_NUMERICAL_NOTE_FFT:
            case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
            case CUDNN_NUMERICAL_NOTE_WINOGRAD:
            case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
            case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
            case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
                return false;
            default:
                break;
        }
    }
    return true;
}

// The plans of one shape at one pointer alignment: candidates until the first forward measures
// them, then the fastest alone.
struct Exec {
    bool built = false, chosen = false;
    std::vector<Desc> plans;
    std::vector<int64_t> ws;
    std::map<std::tuple<const void*, const void*, void*, void*>, Desc> packs;  // variant pack per pointer set
};

struct Plan {
    int n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0, pad = 0;
    size_t ws_cap = 0;
    int on = 0, oc = 0, oh = 0, ow = 0;  // output dims
    bool ready = false;
    Exec exec[3];  // byte alignment 16, 8, 4
};

inline bool build(const Plan& p, int64_t align, Exec& e) {
    e.built = true;
    if (handle() == nullptr) return false;
    Desc x = tensor(UID_X, p.n, p.c, p.h, p.w, align), wt = tensor(UID_W, p.k, p.c, p.r, p.s, align),
         y = tensor(UID_Y, p.on, p.oc, p.oh, p.ow, align);
    Desc cd = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "create conv");
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t dims = 2, pads[2] = {p.pad, p.pad}, ones[2] = {1, 1};
    bool good = x && wt && y &&
                set(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "conv compute type") &&
                set(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "conv mode") &&
                set(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, "conv dims") &&
                set(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads, "conv pre-padding") &&
                set(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads, "conv post-padding") &&
                set(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones, "conv dilation") &&
                set(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones, "conv strides") &&
                ok(cudnnBackendFinalize(cd), "finalize conv");
    Desc op = good ? make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "create conv op") : nullptr;
    const float alpha = 1.0f, beta = 0.0f;
    good = good && set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "op x") &&
           set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &wt, "op w") &&
           set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "op y") &&
           set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd, "op conv") &&
           set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "op alpha") &&
           set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "op beta") &&
           ok(cudnnBackendFinalize(op), "finalize conv op");
    Desc graph = good ? make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "create graph") : nullptr;
    cudnnHandle_t hd = handle();
    good = good && set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &hd, "graph handle") &&
           set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op, "graph ops") &&
           ok(cudnnBackendFinalize(graph), "finalize graph");
    Desc heur = good ? make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "create heuristics") : nullptr;
    const cudnnBackendHeurMode_t hmode = CUDNN_HEUR_MODE_A;
    good = good && set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heur graph") &&
           set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hmode, "heur mode") &&
           ok(cudnnBackendFinalize(heur), "finalize heuristics");
    int64_t count = 0;
    good = good && ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                               &count, nullptr),
                      "heuristic result count");
    std::vector<Desc> cfgs;
    if (good && count > 0) {
        count = std::min<int64_t>(count, 24);
        for (int64_t i = 0; i < count; ++i) cfgs.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "create engine config"));
        int64_t got = 0;
        good = std::all_of(cfgs.begin(), cfgs.end(), [](Desc d) { return d != nullptr; }) &&
               ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                           cfgs.data()),
                  "heuristic results");
        for (int64_t i = 0; good && i < got && e.plans.size() < 8; ++i) {
            if (!exact_engine(cfgs[i])) continue;
            Desc plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "create plan");
            if (plan == nullptr) continue;
            int64_t ws = 0;
            // An engine that does not support this graph fails to finalize: not an error, the next one.
            if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &hd) ==
                    CUDNN_STATUS_SUCCESS &&
                cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                         &cfgs[i]) == CUDNN_STATUS_SUCCESS &&
                cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
                cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, nullptr, &ws) ==
                    CUDNN_STATUS_SUCCESS &&
                ws >= 0 && (size_t)ws <= p.ws_cap) {
                e.plans.push_back(plan);
                e.ws.push_back(ws);
            } else {
                cudnnBackendDestroyDescriptor(plan);
            }
        }
    }
    if (good && e.plans.empty()) std::fprintf(stderr, "kagent kernel: cuDNN: no exact fp32 engine for this convolution\n");
    return good && !e.plans.empty();
}

inline Plan& plan(int n, int c, int h, int w, int k, int r, int s, int pad, size_t ws_cap) {
    static std::map<std::tuple<int, int, int, int, int, int, int, int, size_t>, Plan> plans;
    const auto key = std::make_tuple(n, c, h, w, k, r, s, pad, ws_cap);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p;
    p.n = n, p.c = c, p.h = h, p.w = w, p.k = k, p.r = r, p.s = s, p.pad = pad, p.ws_cap = ws_cap;
    p.on = n, p.oc = k, p.oh = h + 2 * pad - r + 1, p.ow = w + 2 * pad - s + 1;
    p.ready = n > 0 && c > 0 && k > 0 && p.oh > 0 && p.ow > 0;
    return plans.emplace(key, p).first->second;
}

inline Desc pack(Exec& e, int64_t ws_bytes, const float* x, const float* weight, float* y, void* ws) {
    const auto key = std::make_tuple((const void*)x, (const void*)weight, (void*)y, ws_bytes > 0 ? ws : nullptr);
    auto it = e.packs.find(key);
    if (it != e.packs.end()) return it->second;
    if (e.packs.size() >= 64) {  // pointers seen once (inputs drawn per call) do not pile up
        for (auto& kv : e.packs) cudnnBackendDestroyDescriptor(kv.second);
        e.packs.clear();
    }
    Desc vp = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "create variant pack");
    const int64_t uids[3] = {UID_X, UID_W, UID_Y};
    void* ptrs[3] = {(void*)x, (void*)weight, (void*)y};
    void* wsp = ws_bytes > 0 ? ws : nullptr;
    if (!(set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, "variant pack uids") &&
          set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs, "variant pack pointers") &&
          set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp, "variant pack workspace") &&
          ok(cudnnBackendFinalize(vp), "finalize variant pack"))) {
        if (vp) cudnnBackendDestroyDescriptor(vp);
        return nullptr;
    }
    e.packs.emplace(key, vp);
    return vp;
}

// Times each candidate plan on these buffers (y is overwritten, the caller's forward writes it
// again) and keeps the fastest; a plan that fails to run is dropped.
inline bool choose(Exec& e, const float* x, const float* weight, float* y, void* ws) {
    e.chosen = true;
    cudaEvent_t a, b;
    if (cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess) return false;
    size_t best = e.plans.size();
    float best_ms = 0.0f;
    for (size_t i = 0; i < e.plans.size(); ++i) {
        Desc vp = pack(e, e.ws[i], x, weight, y, ws);
        if (vp == nullptr || cudnnBackendExecute(handle(), e.plans[i], vp) != CUDNN_STATUS_SUCCESS) continue;
        float ms = 1e30f;
        bool ran = true;
        for (int t = 0; t < 3 && ran; ++t) {
            cudaEventRecord(a);
            ran = cudnnBackendExecute(handle(), e.plans[i], vp) == CUDNN_STATUS_SUCCESS;
            cudaEventRecord(b);
            float one = 0.0f;
            ran = ran && cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&one, a, b) == cudaSuccess;
            ms = std::min(ms, one);
        }
        if (ran && (best == e.plans.size() || ms < best_ms)) best = i, best_ms = ms;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    for (auto& kv : e.packs) cudnnBackendDestroyDescriptor(kv.second);  // packs are per plan's workspace
    e.packs.clear();
    if (best == e.plans.size()) {
        std::fprintf(stderr, "kagent kernel: cuDNN: no engine ran this convolution\n");
        return false;
    }
    for (size_t i = 0; i < e.plans.size(); ++i)
        if (i != best) cudnnBackendDestroyDescriptor(e.plans[i]);
    e.plans = {e.plans[best]};
    e.ws = {e.ws[best]};
    return true;
}

inline int align_class(const void* a, const void* b, const void* c) {
    const uintptr_t v = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c;
    return v % 16 == 0 ? 0 : v % 8 == 0 ? 1 : 2;
}

// y = conv(x, weight) over the plan's whole batch; true when cuDNN ran it. ws holds ws_cap bytes.
inline bool forward(Plan& p, const float* x, const float* weight, float* y, void* ws, size_t ws_cap) {
    if (!p.ready || ws_cap < p.ws_cap) return false;
    const int cls = align_class(x, weight, y);
    Exec& e = p.exec[cls];
    if (!e.built && !build(p, cls == 0 ? 16 : cls == 1 ? 8 : 4, e)) return false;
    if (e.plans.empty()) return false;
    if (!e.chosen && !choose(e, x, weight, y, ws)) return false;
    Desc vp = pack(e, e.ws[0], x, weight, y, ws);
    return vp != nullptr && ok(cudnnBackendExecute(handle(), e.plans[0], vp), "execute convolution");
}

}  // namespace conv
