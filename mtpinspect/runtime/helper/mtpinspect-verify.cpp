// mtpinspect-verify: ask the pinned llama.cpp whether llama-server would start a model with its MTP
// head (--spec-type draft-mtp), without reading a single weight, and what it would allocate.
//
// It takes llama-server's own arguments (-m, -md, --spec-type, -c, ...), parses them with llama.cpp's
// own parser and repeats the steps of llama-server's load_model (tools/server/server-context.cpp) on
// a metadata-only load: llama_model_params.no_alloc ("only load metadata and simulate memory
// allocations") with load_mode NONE, the path llama-server's own fit step takes (common/fit.cpp).
// Steps, each as llama-server runs it:
//   1. the target model and its context, without MTP (the plain llama-server memory);
//   2. the target model with load_mtp and its context;
//   3. common_speculative_init_from_params: the -md draft model, then the MTP draft context;
//   4. common_speculative_init: the draft-mtp driver, whose checks (row width) abort llama-server.
// Tensor data is never touched, so header-only sparse copies of huge files load in milliseconds.
//
// Prints one JSON object on stdout: ok, the failing step and llama.cpp's own message, and the
// memory breakdown (model / context / compute bytes per buffer type) of each context.

#include "arg.h"
#include "common.h"
#include "speculative.h"

#include "llama.h"
#include "llama-ext.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#if defined(__APPLE__)
#include <sys/resource.h>
#endif

#ifndef MTPINSPECT_LLAMA_COMMIT
#define MTPINSPECT_LLAMA_COMMIT "unknown"
#endif

namespace {

// llama.cpp's warnings and errors, kept for the message of a failing step (bounded).
constexpr size_t MAX_LOG_LINES = 200;
constexpr size_t MAX_LINE = 2000;
struct log_line {
    ggml_log_level level;
    std::string text;
};
std::vector<log_line> g_log;
std::string g_partial;

// The JSON document, built as the steps run, so that an abort can still print it.
std::string g_phases;  // ,-separated "name": {...} members
std::string g_facts;   // ,-separated members about the models

std::string json_str(const std::string & s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"':  out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    snprintf(buf, sizeof(buf), "\\u%04x", c);
                    out += buf;
                } else {
                    out += (char) c;
                }
        }
    }
    return out + "\"";
}

void on_log(ggml_log_level level, const char * text, void * /*user_data*/) {
    // Continuation pieces keep the level of the line they continue; only warnings and errors matter.
    static ggml_log_level last = GGML_LOG_LEVEL_NONE;
    if (level != GGML_LOG_LEVEL_CONT) {
        last = level;
    }
    if (last != GGML_LOG_LEVEL_WARN && last != GGML_LOG_LEVEL_ERROR) {
        return;
    }
    g_partial += text;
    size_t nl;
    while ((nl = g_partial.find('\n')) != std::string::npos) {
        std::string line = g_partial.substr(0, std::min(nl, MAX_LINE));
        g_partial.erase(0, nl + 1);
        if (!line.empty()) {
            if (g_log.size() == MAX_LOG_LINES) {
                g_log.erase(g_log.begin());
            }
            g_log.push_back({last, line});
        }
    }
}

// What llama.cpp said since `mark`: its errors, or its warnings when it gave no error (a context
// that cannot be created is a warning, "context type MTP requested but ...").
std::string log_since(size_t mark) {
    for (ggml_log_level level : {GGML_LOG_LEVEL_ERROR, GGML_LOG_LEVEL_WARN}) {
        std::string out;
        for (size_t i = std::min(mark, g_log.size()); i < g_log.size(); i++) {
            if (g_log[i].level == level) {
                out += (out.empty() ? "" : "; ") + g_log[i].text;
            }
        }
        if (!out.empty()) {
            return out;
        }
    }
    return "";
}

std::string log_lines_json() {
    std::string out = "[";
    for (size_t i = 0; i < g_log.size(); i++) {
        out += (i ? "," : "") + json_str(g_log[i].text);
    }
    return out + "]";
}

// Peak resident memory of this program since exec, in bytes; -1 where unknown. Linux keeps it per
// address space (VmHWM), so the parent's pages before exec do not count, unlike getrusage's maxrss.
long long peak_rss() {
#if defined(__linux__)
    std::ifstream status("/proc/self/status");
    std::string key;
    long long kib;
    while (status >> key) {
        if (key == "VmHWM:" && status >> kib) {
            return kib * 1024;
        }
        status.ignore(4096, '\n');
    }
    return -1;
#elif defined(__APPLE__)
    struct rusage usage;
    return getrusage(RUSAGE_SELF, &usage) == 0 ? (long long) usage.ru_maxrss : -1;  // bytes on macOS
#else
    return -1;
#endif
}

void print_result(bool ok, const std::string & step, const std::string & error) {
    std::string doc = "{\"ok\":" + std::string(ok ? "true" : "false");
    doc += ",\"llama_cpp_commit\":" + json_str(MTPINSPECT_LLAMA_COMMIT);
    doc += ",\"step\":" + (step.empty() ? std::string("null") : json_str(step));
    doc += ",\"error\":" + (error.empty() ? std::string("null") : json_str(error));
    doc += ",\"peak_rss\":" + std::to_string(peak_rss());
    doc += ",\"models\":{" + g_facts + "}";
    doc += ",\"memory\":{" + g_phases + "}";
    doc += ",\"log\":" + log_lines_json() + "}\n";
    fputs(doc.c_str(), stdout);
    fflush(stdout);
}

// A GGML_ASSERT in llama.cpp aborts llama-server; here it becomes the verdict of the current step.
// ggml prefixes the message with the source file's absolute path: keep it from the tree's root on.
std::string g_step = "arguments";
void on_abort(const char * message) {
    std::string text = message;
    const size_t root = text.rfind("llama.cpp/", text.find(": "));
    if (root != std::string::npos) {
        text.erase(0, root + strlen("llama.cpp/"));
    }
    print_result(false, g_step, text);
    _exit(0);
}

void add_fact(const std::string & member) {
    g_facts += (g_facts.empty() ? "" : ",") + member;
}

void add_model(const char * role, const llama_model * model, const std::string & path) {
    char desc[256];
    llama_model_desc(model, desc, sizeof(desc));
    add_fact(json_str(role) + ":{\"path\":" + json_str(path) + ",\"desc\":" + json_str(desc) +
             ",\"n_embd\":" + std::to_string(llama_model_n_embd(model)) +
             ",\"n_embd_out\":" + std::to_string(llama_model_n_embd_out(model)) +
             ",\"n_layer\":" + std::to_string(llama_model_n_layer(model)) +
             ",\"n_layer_nextn\":" + std::to_string(llama_model_n_layer_nextn(model)) +
             ",\"size\":" + std::to_string(llama_model_size(model)) + "}");
}

void add_memory(const char * phase, const llama_context * ctx) {
    std::string buffers;
    size_t model = 0, context = 0, compute = 0;
    for (const auto & [buft, mb] : llama_get_memory_breakdown(ctx)) {
        buffers += (buffers.empty() ? "" : ",") + std::string("{\"name\":") + json_str(ggml_backend_buft_name(buft)) +
                   ",\"host\":" + (ggml_backend_buft_is_host(buft) ? "true" : "false") +
                   ",\"model\":" + std::to_string(mb.model) + ",\"context\":" + std::to_string(mb.context) +
                   ",\"compute\":" + std::to_string(mb.compute) + "}";
        model += mb.model;
        context += mb.context;
        compute += mb.compute;
    }
    g_phases += (g_phases.empty() ? "" : ",") + json_str(phase) + ":{\"n_ctx\":" + std::to_string(llama_n_ctx(ctx)) +
                ",\"model\":" + std::to_string(model) + ",\"context\":" + std::to_string(context) +
                ",\"compute\":" + std::to_string(compute) + ",\"buffers\":[" + buffers + "]}";
}

int fail(const std::string & step, const std::string & what, size_t mark) {
    const std::string said = log_since(mark);
    print_result(false, step, said.empty() ? what : what + ": " + said);
    return 0;
}

// As tools/server/server.cpp and server-context.cpp set them before load_model.
void server_defaults(common_params & params) {
    if (params.n_parallel < 0) {
        params.n_parallel = 4;
        params.kv_unified = true;
    }
    if (params.embedding ||
            (params.pooling_type != LLAMA_POOLING_TYPE_UNSPECIFIED && params.pooling_type != LLAMA_POOLING_TYPE_NONE)) {
        params.n_outputs_max = params.n_batch;
        params.n_outputs_max_per_seq = 1;
        return;
    }
    auto limits = common_speculative_get_output_limits(
            params.n_batch, params.n_parallel, common_speculative_n_max(&params.speculative));
    params.n_outputs_max = std::max<int32_t>(1, limits.total);
    params.n_outputs_max_per_seq = std::max<int32_t>(1, limits.per_seq);
}

}  // namespace

int main(int argc, char ** argv) {
    ggml_set_abort_callback(on_abort);
    llama_log_set(on_log, nullptr);

    common_params params;
    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_SERVER)) {
        print_result(false, "arguments", "llama-server does not accept these arguments");
        return 2;
    }
    llama_log_set(on_log, nullptr);  // the parser may have installed its own logger
    server_defaults(params);
    params.no_alloc = true;
    params.load_mode = LLAMA_LOAD_MODE_NONE;  // the mmap path asserts !no_alloc (src/llama-model.cpp)

    llama_backend_init();

    const bool spec_mtp = std::find(params.speculative.types.begin(), params.speculative.types.end(),
                                    COMMON_SPECULATIVE_TYPE_DRAFT_MTP) != params.speculative.types.end();
    const bool has_draft = params.speculative.has_dft();

    // 1. The model as plain llama-server runs it (no speculative decoding): the memory MTP adds to.
    {
        g_step = "target without MTP";
        common_params plain = params;
        plain.speculative.types = {COMMON_SPECULATIVE_TYPE_NONE};
        server_defaults(plain);
        const size_t mark = g_log.size();
        llama_model_ptr model(llama_model_load_from_file(plain.model.path.c_str(), common_model_params_to_llama(plain)));
        if (!model) {
            return fail(g_step, "failed to load model '" + plain.model.path + "'", mark);
        }
        llama_context_ptr ctx(llama_init_from_model(model.get(), common_context_params_to_llama(plain)));
        if (!ctx) {
            return fail(g_step, "failed to create context with model '" + plain.model.path + "'", mark);
        }
        add_memory("without_mtp", ctx.get());
    }
    if (!spec_mtp) {
        print_result(true, "", "");
        return 0;
    }

    // 2. The target with its MTP layers, as llama-server loads it for --spec-type draft-mtp.
    g_step = "target";
    size_t mark = g_log.size();
    llama_model_ptr model_tgt(llama_model_load_from_file(params.model.path.c_str(), common_model_params_to_llama(params)));
    if (!model_tgt) {
        return fail(g_step, "failed to load model '" + params.model.path + "'", mark);
    }
    add_model("target", model_tgt.get(), params.model.path);
    llama_context_ptr ctx_tgt(llama_init_from_model(model_tgt.get(), common_context_params_to_llama(params)));
    if (!ctx_tgt) {
        return fail(g_step, "failed to create context with model '" + params.model.path + "'", mark);
    }
    add_memory("target", ctx_tgt.get());

    // 3. The draft model (-md) and the MTP draft context, by llama.cpp's own function.
    g_step = has_draft ? "draft model" : "MTP context";
    mark = g_log.size();
    common_params params_dft = common_base_params_to_speculative(params);
    common_speculative_init_result_ptr spec_init =
        common_speculative_init_from_params(params_dft, model_tgt.get(), ctx_tgt.get());
    llama_model * model_dft = spec_init->model();
    llama_context * ctx_dft = spec_init->context();
    if (has_draft && model_dft == nullptr) {
        return fail(g_step, "failed to load draft model '" + params_dft.model.path + "'", mark);
    }
    if (model_dft != nullptr) {
        add_model("draft", model_dft, params_dft.model.path);
    }
    g_step = "MTP context";
    if (ctx_dft == nullptr) {
        return fail(g_step, "failed to create MTP context", mark);
    }
    add_memory("mtp", ctx_dft);

    // 4. The draft-mtp driver. llama-server first asks whether the target can drop partial sequences
    // by decoding two tokens, which a metadata-only load cannot do; a context without memory cannot.
    g_step = "draft-mtp";
    mark = g_log.size();
    if (llama_get_memory(ctx_tgt.get()) == nullptr) {
        return fail(g_step, "speculative decoding not supported by this context", mark);
    }
    params.speculative.draft.ctx_tgt = ctx_tgt.get();
    params.speculative.draft.ctx_dft = ctx_dft;
    common_speculative_ptr spec;
    try {
        spec.reset(common_speculative_init(params.speculative, params.n_parallel));
    } catch (const std::exception & e) {
        return fail(g_step, std::string("failed to initialize speculative decoding context: ") + e.what(), mark);
    }
    if (!spec) {
        return fail(g_step, "failed to initialize speculative decoding context", mark);
    }
    print_result(true, "", "");
    return 0;
}
