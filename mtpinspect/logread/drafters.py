"""Where each engine drafts: the modules, functions, native frames and graph tensors of its speculative code.

A failure is tied to the speculative path by who printed it and where it ran (issue 42, rule 2): a traceback
frame in an engine's drafter module, a native frame in its drafting functions, an assert on a tensor only a
drafter builds. This is the one table of those places, per engine, read from the engines' own trees; the
catalogue (catalogue.py) turns each row into a message, and the tie (rules_run.py) asks :func:`drafting_place`
of a crash's lines. Each row is read by structure, not by a word alone:

- a Python module only under its engine's package path (``vllm/v1/spec_decode/``, ``sglang/srt/speculative/``) or a
  platform plugin's (``vllm_ascend/spec_decode/``, ``vllm_gaudi/v1/spec_decode/``): a blog app's ``draft.py`` or
  another program's ``speculative_*.py`` is no engine's drafter;
- a native frame by its namespace or its function's full name (``sglang::ngram::Trie``, llama.cpp's
  ``common_speculative_draft``, ``llama_context::extract_layer_inputs``), whatever prints it: gdb's ``#N 0x.. in
  f (...)``, glibc's ``backtrace_symbols`` (``lib.so(_Z..f..+0x1f)``, the mangled name holds the plain one), a
  Windows or Metal dump; KenLM's ``lm::ngram::`` is no drafter;
- a graph tensor or context field that only a drafter builds or reads, in an assert's or abort's text
  (``t_layer_inp``: the target's layer inputs, extracted only for EAGLE3 / DFlash features; vLLM's attention
  metadata of a speculative step, ``num_spec_decodes``; ggml's own assert on the drafted tokens, ``draft.size()``).

Every pattern is linear (no nested repetition) and tried only on lines holding one of its keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtpinspect.vocabulary import Engine, Word


class Place(Word):
    """What kind of place in an engine's code a row names."""

    module = "module"  # a source file or package path (a traceback frame's File "...", an assert's file:line)
    function = "function"  # a Python frame's function name (Python's "line N, in f", faulthandler's "line N in f")
    native = "native"  # a C/C++ symbol in a native backtrace (gdb, backtrace_symbols, a demangled frame line)
    tensor = "tensor"  # a graph tensor or context field only a drafter builds or reads (an assert's or abort's text)
    mode = "mode"  # a forward mode of the engine's batches that only drafting runs (the drafter's or the verify pass)


@dataclass(frozen=True)
class DrafterCode:
    """One row: a place in an engine's drafting code, found by ``pattern`` on lines holding one of ``keys``."""

    name: str
    engine: Engine | None  # None: the place is a drafter's in any engine (a frame's function name)
    place: Place
    keys: tuple[str, ...]
    pattern: str
    source: str  # where the engine's tree has it
    means: str  # what a line found there says, as reports show it
    in_prefix: bool = False  # found in the line's log prefix (the logger's module), which readers strip before matching


_V = Engine.vllm
_S = Engine.sglang
_L = Engine.llama_cpp

# A Python frame in an engine's package, as a traceback prints it ('File "p", line N, in f') and as faulthandler's
# dump prints it ('File "p", line N in f', no comma: Modules/faulthandler.c dump_frame); a drafter's function name in a
# blog app's views.py is no drafter's.
_ENGINE_FRAME = r"^File \"[^\"\n]{0,300}?(?:vllm|sglang)[/\\][^\"\n]{1,300}\", line \d{1,7},? in "

TABLE: tuple[DrafterCode, ...] = (
    # -- vLLM ------------------------------------------------------------------------------------------------
    # Only under the vllm package (a path "vllm/spec_decode/", "vllm/v1/spec_decode/", its dotted module name) or
    # in vLLM's own metric names (vllm/v1/metrics/loggers.py: "vllm:spec_decode_num_drafts", ...): another program's
    # specsheet/spec_decode/ folder is no vLLM drafter.
    DrafterCode("vLLM spec decode path", _V, Place.module, ("spec_decode",),
                r"\bvllm(?:[/\\.]v1)?[/\\.]spec_decode\b|\bvllm:spec_decode_\w",
                "vllm/spec_decode/ (V0: spec_decode_worker.py, multi_step_worker.py, top1_proposer.py, "
                "draft_model_runner.py); vllm/v1/spec_decode/ (V1: eagle.py, ngram_proposer.py, medusa.py, "
                "draft_model.py, suffix_decoding.py, mtp_proposer.py)",
                "vLLM's speculative decoding code"),
    # The platform plugins' own drafters, in their packages: vllm-ascend (vllm_ascend/spec_decode/: eagle_proposer.py,
    # mtp_proposer.py, llm_base_proposer.py, ngram_proposer.py, dflash_proposer.py ...), vllm-gaudi (vllm_gaudi/v1/
    # spec_decode/hpu_eagle.py), and any vllm_<platform> plugin laid out the same way. Read up to the folder's name
    # (no boundary after it: a paste that lost a path's separator, "spec_decodejeagle_proposer.py", keeps it), or a
    # proposer module's file name under a vLLM-family package. HabanaAI's vllm-fork keeps the vllm package (above).
    DrafterCode("vLLM plugin's drafter module", _V, Place.module, ("vllm_",),
                r"\bvllm_[a-z]{2,20}[/\\.](?:v1[/\\.])?spec_decode|"
                r"\bvllm(?:_[a-z]{2,20})?[/\\.][^\s\"']{0,200}?(?<![A-Za-z])(?:eagle\d?|mtp|ngram|medusa|draft|dflash|suffix|"
                r"llm_base)_proposer(?:_\w{1,10})?\.py\b",
                "vllm-ascend vllm_ascend/spec_decode/ (eagle_proposer.py, mtp_proposer.py, llm_base_proposer.py, "
                "ngram_proposer.py, dflash_proposer.py, draft_proposer.py, suffix_proposer.py); vllm-gaudi "
                "vllm_gaudi/v1/spec_decode/ (hpu_eagle.py)",
                "a vLLM platform plugin's speculative decoding code"),
    # vLLM's logger names the module that printed a line ("INFO 09-18 12:03:11 [eagle.py:644] ...", V0 without the
    # bracket: "INFO 08-06 17:55:14 spec_decode_worker.py:57] ..."): a line its drafter printed is the drafter's voice.
    # The module is read by the parts of its name (split at "_"), as vllm/v1/spec_decode/ names its drafters and keeps
    # adding them (eagle.py, eagle_proposer.py, dflash.py, dspark.py, dflare.py, medusa.py, mlp_speculator.py,
    # draft_model.py, ngram_proposer_gpu.py, suffix_decoding.py, mtp_proposer.py, multi_layer_eagle.py, custom_class_
    # proposer.py), with the drafter models' modules (deepseek_mtp.py, llama_eagle3.py, qwen3_dflash.py) and V0's
    # workers (spec_decode_worker.py, multi_step_worker.py, batch_expansion.py): a part is a drafter's word, never a
    # piece of one ("beagle.py", "mtpx.py").
    DrafterCode("vLLM drafter's own line", _V, Place.module, (".py:",),
                r"\b(?:DEBUG|INFO|WARNING|ERROR) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? \[?(?:[a-z0-9]{1,30}_){0,3}"
                r"(?:eagle\d?|dflash|dspark|dflare|medusa|mtp|nextn|ngram|draft|drafter|proposer|speculator|spec_decode|"
                r"suffix_decoding|multi_step_worker|batch_expansion)(?:_[a-z0-9]{1,30}){0,3}\.py:\d{1,6}\]",
                "vllm/logger.py (the \"[%(filename)s:%(lineno)d]\" prefix) over vllm/v1/spec_decode/ (eagle.py, "
                "ngram_proposer.py, medusa.py, draft_model.py, suffix_decoding.py) and vllm/spec_decode/ (V0: "
                "spec_decode_worker.py, multi_step_worker.py, top1_proposer.py)",
                "a line vLLM's drafter printed", in_prefix=True),
    # vLLM's suffix decoding drafts through Arctic Inference's cache (vllm/v1/spec_decode/suffix_decoding.py imports
    # arctic_inference.suffix_decoding.SuffixDecodingCache): its frames and native code are the drafter's.
    DrafterCode("vLLM suffix decoding cache", _V, Place.module, ("arctic_inference", "SuffixDecodingCache"),
                r"\barctic_inference[/\\.]suffix_decoding\b|\bSuffixDecodingCache\b",
                "vllm/v1/spec_decode/suffix_decoding.py (SuffixDecodingProposer: from arctic_inference.suffix_decoding "
                "import SuffixDecodingCache)",
                "vLLM's suffix decoding drafter (Arctic Inference's cache)"),
    DrafterCode("vLLM rejection sampler", _V, Place.module,
                ("sample_recovered_tokens", "rejection_sampler", "rejection_greedy_sample"),
                r"sample_recovered_tokens|rejection_sampler|rejection_greedy_sample",
                "vllm/v1/sample/rejection_sampler.py (its Triton kernels run only when drafts are verified)",
                "vLLM's speculative rejection sampler"),
    # The drafter models' own files (vllm/model_executor/models/: llama_eagle.py, llama_eagle3.py, deepseek_eagle.py,
    # medusa.py, mlp_speculator.py, deepseek_mtp.py, qwen3_next_mtp.py ...), only in the engine's models folder.
    DrafterCode("vLLM drafter model module", _V, Place.module, ("model_executor",),
                r"model_executor[/\\.]models[/\\.](?:\w{1,40}_)?(?:eagle\d?|medusa|mlp_speculator|mtp|dflash|dspark)"
                r"(?:_\w{1,40})?\.py\b",
                "vllm/model_executor/models/ (llama_eagle3.py, deepseek_eagle.py, medusa.py, mlp_speculator.py, "
                "deepseek_mtp.py, glm4_moe_mtp.py, qwen3_dflash.py)",
                "a vLLM drafter model's module"),
    # The target's verification metadata, which vLLM's attention backends fill only while speculative decoding: the
    # GDN / Mamba builders set num_spec_decodes, spec_sequence_masks and the spec_* index tensors from
    # num_decode_draft_tokens_cpu only when use_spec_decode is on and the step has draft tokens (else None and 0). An
    # assert or error on them is the speculative step's batch breaking the target's side, a crash on the speculative path.
    DrafterCode("vLLM speculative attention metadata", _V, Place.tensor,
                ("num_spec_decode", "spec_sequence_masks", "spec_state_indices", "spec_query_start_loc", "spec_token_ind",
                 "num_decode_draft_tokens"),
                r"\bnum_spec_decode(?:s|_tokens)\b|\bspec_sequence_masks\w{0,10}\b|\bspec_state_indices\w{0,20}\b|"
                r"\bspec_query_start_loc\b|\bspec_token_ind(?:x|ices)\b|\bnum_decode_draft_tokens\w{0,10}\b",
                "vllm/v1/attention/backends/gdn_attn.py (GDNAttentionMetadataBuilder.build: num_spec_decodes = "
                "spec_sequence_masks.sum() only when self.use_spec_decode and num_decode_draft_tokens_cpu; spec_state_indices"
                "_tensor, spec_query_start_loc, spec_token_indx), vllm/v1/attention/backends/mamba_attn.py",
                "vLLM's attention metadata of a speculative step (the drafts the target verifies)"),
    # vLLM's drafters by their own names where a paste shows no path (a call chain written by hand, a frame's
    # function, a log's class name): V1's proposer modules and classes (vllm/v1/spec_decode/: llm_base_proposer.py,
    # eagle.py EagleProposer, ngram_proposer.py NgramProposer, medusa.py MedusaProposer, draft_model.py
    # DraftModelProposer, suffix_decoding.py SuffixDecodingProposer; vllm-ascend's *_proposer.py), V0's workers
    # (vllm/spec_decode/spec_decode_worker.py SpecDecodeWorker, multi_step_worker.py, top1_proposer.py) and the model
    # runner's propose_draft_token_ids. Never inside a path (a blog app's /srv/app/draft_proposer.py is a path, read
    # by the rows above only under vLLM's package).
    DrafterCode("vLLM drafter by name", _V, Place.function,
                ("_proposer", "Proposer", "spec_decode_worker", "multi_step_worker", "SpecDecodeWorker", "MultiStepWorker",
                 "propose_draft_token_ids"),
                r"(?<![\w/\\.-])(?:(?:llm_base|eagle\d?|mtp|ngram|medusa|draft|dflash|dspark|suffix)_proposer(?:_gpu)?|"
                r"spec_decode_worker|multi_step_worker|top1_proposer)\b|"
                r"\b(?:Eagle\d?|Ngram|Medusa|DraftModel|SuffixDecoding|DFlash|DSpark|Top1)Proposer\b|"
                r"\b(?:SpecDecodeWorker|MultiStepWorker)\b|\bpropose_draft_token_ids\b",
                "vllm/v1/spec_decode/ (llm_base_proposer.py, eagle.py EagleProposer, ngram_proposer.py NgramProposer, "
                "medusa.py MedusaProposer, draft_model.py DraftModelProposer, suffix_decoding.py SuffixDecodingProposer), "
                "vllm/spec_decode/ (V0: spec_decode_worker.py SpecDecodeWorker, multi_step_worker.py MultiStepWorker, "
                "top1_proposer.py Top1Proposer), vllm/v1/worker/gpu_model_runner.py (propose_draft_token_ids)",
                "vLLM's drafter, by its own module or class name"),
    # -- SGLang ----------------------------------------------------------------------------------------------
    DrafterCode("SGLang speculative path", _S, Place.module, ("speculative",),
                r"sglang[/\\.](?:python[/\\.])?(?:sglang[/\\.])?srt[/\\.]speculative\b|srt[/\\]speculative[/\\]",
                "python/sglang/srt/speculative/ (eagle_worker.py, eagle_worker_v2.py, multi_layer_eagle_worker.py, "
                "ngram_worker.py, standalone_worker.py, cpp_ngram/)",
                "SGLang's speculative decoding code"),
    DrafterCode("SGLang drafter model module", _S, Place.module, ("srt",),
                r"srt[/\\.]models[/\\.](?:\w{1,40}_)?(?:eagle\d?|nextn|mtp|dflash)(?:_\w{1,40})?\.py\b",
                "python/sglang/srt/models/ (llama_eagle.py, llama_eagle3.py, deepseek_nextn.py, glm4_moe_nextn.py, "
                "qwen3_next_mtp.py)",
                "an SGLang drafter model's module"),
    # SGLang's drafters by their own module or function names where a paste shows no path (a call chain written by
    # hand: "eagle_prepare_for_verify <- multi_layer_eagle_worker_v2.verify"): python/sglang/srt/speculative/'s
    # eagle_worker.py, eagle_worker_v2.py, multi_layer_eagle_worker(_v2).py, eagle_info.py (eagle_prepare_for_verify),
    # eagle_utils.py, eagle_draft_(extend_)cuda_graph_runner.py, standalone_worker(_v2).py, dflash_worker(_v2).py,
    # dflash_info(_v2).py, base_spec_worker.py, spec_info.py; a module name only as a name, never inside a path.
    DrafterCode("SGLang drafter by name", _S, Place.function,
                ("eagle_", "standalone_worker", "dflash_", "base_spec_worker", "spec_info", "speculative_generation"),
                r"(?<![\w/\\.-])(?:multi_layer_eagle_worker(?:_v2)?|eagle_worker(?:_v2|_common)?|eagle_info(?:_v2)?|eagle_utils|"
                r"eagle_draft_(?:extend_)?cuda_graph_runner|standalone_worker(?:_v2)?|dflash_worker(?:_v2)?|dflash_info(?:_v2)?|"
                r"base_spec_worker|spec_info)(?:\.py\b|\.[A-Za-z_]|\b)|"
                r"\b(?:eagle_prepare_for_verify|forward_batch_speculative_generation|_draft_preprocess_decode)\b",
                "python/sglang/srt/speculative/ (eagle_worker.py, eagle_worker_v2.py, multi_layer_eagle_worker_v2.py, "
                "eagle_info.py eagle_prepare_for_verify, eagle_utils.py, eagle_draft_cuda_graph_runner.py, "
                "standalone_worker.py, dflash_worker.py, dflash_info.py, base_spec_worker.py, spec_info.py)",
                "SGLang's drafter, by its own module or function name"),
    # The forward modes of SGLang's batches that only speculative decoding runs (python/sglang/srt/model_executor/
    # forward_batch_info.py ForwardMode: TARGET_VERIFY "Used in speculative decoding: verify a batch in the target model",
    # DRAFT_EXTEND "extend a batch in the draft model", DRAFT_EXTEND_V2; their tests is_target_verify(),
    # is_draft_extend(), is_draft_extend_v2()), as a frame's source line, an assert's text or a poster's note on a frame
    # ("in init_forward_metadata (DRAFT_EXTEND_V2 path)") names them: a batch of the drafting path being run. EXTEND,
    # DECODE, MIXED, IDLE are every batch's.
    DrafterCode("SGLang drafting forward mode", _S, Place.mode,
                ("DRAFT_EXTEND", "TARGET_VERIFY", "is_draft_extend", "is_target_verify"),
                r"(?<![\w.])(?:ForwardMode\.)?(?:DRAFT_EXTEND(?:_V2)?|TARGET_VERIFY)\b|"
                r"\bis_(?:draft_extend(?:_v2)?|target_verify)\(",
                "python/sglang/srt/model_executor/forward_batch_info.py (ForwardMode.TARGET_VERIFY, DRAFT_EXTEND, "
                "DRAFT_EXTEND_V2; is_target_verify, is_draft_extend)",
                "a forward mode of SGLang's that only drafting runs (the drafter's extend or the target's verify pass)"),
    # SGLang's n-gram drafter is C++ (python/sglang/srt/speculative/cpp_ngram/: trie.h, ngram.h); its frames name the
    # namespace, "sglang::ngram::" in 2026 builds, bare "ngram::" in later ones (sglang.kernels.ops.speculative).
    DrafterCode("SGLang n-gram native frame", _S, Place.native, ("sglang::ngram::", "ngram::"),
                # The bare namespace is a common one (another library's ngram::Trie): SGLang's only where the frame names
                # SGLang's library after it.
                r"\bsglang::ngram::\w|(?<![\w:])ngram::(?:Trie|Ngram|NgramCache|NgramCorpus|SuffixAutomaton|TrieCache)\b"
                r"[^\n]{0,400}?sglang",
                "python/sglang/srt/speculative/cpp_ngram/ (trie.h class Trie: insert, squeeze; ngram.h class Ngram: "
                "insertWorker)",
                "a native frame of SGLang's n-gram drafter"),
    # -- llama.cpp -------------------------------------------------------------------------------------------
    # The drafters' own functions (common/speculative.cpp: common_speculative_draft, common_speculative_impl_draft_mtp;
    # common/ngram-*.cpp: common_ngram_map_draft, common_ngram_cache_update) and the target context's hooks that only
    # a drafter turns on (src/llama-context.cpp: extract_layer_inputs for EAGLE3/DFlash, the nextn embeddings for MTP).
    DrafterCode("llama.cpp drafting function", _L, Place.native,
                ("common_speculative", "common_ngram", "layer_inp", "layer_inputs", "nextn", "handle_mtp", "graph_mtp",
                 "load_block_mtp", "DECODER_MTP", "llama_model_eagle3", "llama_model_dflash", "llama_model_gemma4_assistant"),
                # A mangled name (backtrace_symbols: "_Z24common_speculative_draftP18...", "_ZN13llama_context20extract_
                # layer_inputsE...") has a length digit before each part: no word boundary there.
                r"(?<![A-Za-z_])common_speculative\w*|(?<![A-Za-z_])common_ngram_\w+|llama_context(?:::|\d{1,3})(?:"
                r"extract_layer_inputs|\w*embeddings_(?:layer_inp|nextn)\w*|set_nextn_layer_offset|handle_mtp\w*)|"
                r"(?<![A-Za-z_])llama_(?:get|set)_embeddings_(?:layer_inp|nextn)\w*|"
                # each MTP architecture's draft graph (src/models/<arch>.cpp: llama_model_<arch>::graph_mtp) and loader,
                # the drafter architectures' own models (src/models/eagle3.cpp, dflash.cpp, gemma4-assistant.cpp)
                r"(?:::|\d{1,3})graph_mtp\b|\bload_block_mtp\b|\bLLM_GRAPH_TYPE_DECODER_MTP\b|"
                r"llama_model_(?:eagle3|dflash|gemma4_assistant)(?![a-z])",
                "common/speculative.cpp (common_speculative_draft, common_speculative_impl_draft_*), common/ngram-map.cpp "
                "and ngram-cache.cpp (common_ngram_*), src/llama-context.cpp (extract_layer_inputs, "
                "set_embeddings_layer_inp, get_embeddings_nextn), src/models/*.cpp (llama_model_<arch>::graph_mtp, "
                "load_block_mtp), src/llama-graph.h (LLM_GRAPH_TYPE_DECODER_MTP), src/models/models.h "
                "(llama_model_eagle3, llama_model_dflash, llama_model_gemma4_assistant)",
                "llama.cpp's drafting code (a native frame or a drafter's hook)"),
    DrafterCode("llama.cpp drafting source", _L, Place.module,
                ("speculative.", "ngram-", "eagle3.cpp", "dflash.cpp", "assistant.cpp", "mtp.cpp"),
                r"\bcommon[/\\](?:speculative|ngram-(?:cache|map|mod))\.(?:cpp|h)\b|[/\\]models[/\\](?:eagle3|dflash|"
                r"gemma4-assistant|[\w-]{1,40}-mtp)\.cpp\b",
                "common/speculative.cpp, common/ngram-cache.cpp, ngram-map.cpp, ngram-mod.cpp; src/models/eagle3.cpp, "
                "dflash.cpp, gemma4-assistant.cpp; MTP branches' src/models/<arch>-mtp.cpp",
                "a source file of llama.cpp's drafters"),
    # Tensors and fields only a drafter builds or reads: the target's layer inputs (t_layer_inp / embd_layer_inp,
    # extracted only when common/speculative.cpp:543 or :1058 turns them on for EAGLE3 / DFlash), the draft-to-target
    # vocabulary map (d2t), the other context a drafter graph borrows (ctx_other), the target layers an EAGLE3 head
    # reads (target_layer_ids).
    DrafterCode("llama.cpp drafter tensor", _L, Place.tensor,
                ("layer_inp", "layer input tensor", "ctx_other", "d2t", "target_layer_ids", "h_nextn"),
                r"\bt_layer_inp\b|\bembd_layer_inp\b|\blayer input tensor\b|\bctx_other\b|\bmodel(?:_other)?(?:->|\.)d2t\b|"
                r"\btarget_layer_ids\b|\bt_h_nextn\b",
                "src/llama-graph.h (t_layer_inp), src/llama-context.cpp:2278 (extract_layer_inputs: \"layer input tensor "
                "not found\"), src/models/eagle3.cpp (ctx_other, d2t), common/speculative.cpp:543 (target_layer_ids)",
                "a tensor only llama.cpp's EAGLE3 / DFlash / MTP drafters build or read"),
    # Tree verification of drafts (DFlash / EAGLE trees in llama.cpp forks, buun-llama-cpp's DFlash): the target
    # verifies a tree of drafted tokens with ops of its own (ggml op names ending _TREE: SSM_CONV_TREE, beside the
    # plain SSM_CONV) and buffers of its own ("allocate_tree_buffers: allocated tree verify buffers: N layers x T
    # tokens"). Only the op's name in ggml's own words ("op not implemented: X_TREE", ggml-cpu.c ggml_get_n_tasks) or
    # that function: a database's "B_TREE" index or a "tree" word elsewhere is no drafter.
    DrafterCode("llama.cpp tree verification", _L, Place.tensor, ("_TREE", "tree_buffers", "tree verify"),
                r"\bop not implemented: [A-Z][A-Z0-9_]{1,40}_TREE\b|\ballocate_tree_buffers\b|"
                r"\btree verify buffers\b",
                "ggml/src/ggml-cpu/ggml-cpu.c (ggml_get_n_tasks: \"op not implemented: %s\"); buun-llama-cpp's DFlash "
                "tree verification (allocate_tree_buffers, the SSM_CONV_TREE op)",
                "the target's verification of a tree of drafted tokens (DFlash / EAGLE trees)"),
    # An assert of ggml's whose condition or message names the draft (common/sampling.cpp common_sampler_sample_and_accept_n:
    # GGML_ASSERT(idxs.size() == draft.size() + 1 && "idxs.size() must be draft.size() + 1"); common/speculative.cpp's
    # n_draft checks): llama.cpp's verification of drafted tokens, whichever drafter made them (MTP, a draft model,
    # n-gram). Only in ggml's own assert (who said it): a C program's assert(draft != NULL) about a blog post is no drafter.
    DrafterCode("llama.cpp draft assert", _L, Place.tensor, ("GGML_ASSERT",),
                r"GGML_ASSERT\([^\n]{0,400}?(?<![A-Za-z0-9])draft\w{0,40}\b",
                "common/sampling.cpp (common_sampler_sample_and_accept_n: GGML_ASSERT(idxs.size() == draft.size() + 1)), "
                "common/speculative.cpp (asserts on n_draft)",
                "a llama.cpp assert on the drafted tokens (the speculative verification path)"),
    # -- vLLM or SGLang: a Python frame in the engine's package whose function is a drafter's ----------------------
    # SGLang's maybe_init_draft_worker, forward_batch_speculative_generation, _draft_preprocess_decode; vLLM's
    # propose_draft_token_ids: the drafter's words, never a bare "draft" (a web app's save_draft_model is no drafter).
    DrafterCode("drafter frame", None, Place.function, ('", line ',),
                _ENGINE_FRAME + r"\w{0,80}?(?:draft_?worker|drafter|_speculative|speculative_(?:decod|draft|worker|algo|step|"
                r"forward|generate|verify)|spec_decode|eagle|propose_?draft|draft_?token|spec_?token|_draft_(?:pre|post)"
                r"process|(?<![A-Za-z])mtp(?![a-z])|(?<![A-Za-z])nextn)\w{0,80}\s*$",
                "Python's traceback and faulthandler formats; the engines' drafting functions (SGLang "
                "eagle_worker.py: _draft_preprocess_decode, forward_batch_speculative_generation; vLLM "
                "gpu_model_runner.py: propose_draft_token_ids)",
                "a traceback frame in the engine's drafting code"),
    # The source line a traceback prints under a frame of the engine's model runner, where it calls into its drafter:
    # vLLM's GPUModelRunner holds it as self.drafter (gpu_model_runner.py _dummy_run: self.drafter.dummy_run(num_tokens);
    # propose_draft_token_ids: self.drafter.propose(...)) and vllm-ascend's model_runner_v1.py sample_tokens calls
    # propose_draft_token_ids(...); SGLang's EAGLEWorker holds self.draft_worker. Only these methods of the drafter
    # object (a blog app's self.drafter.save_post(...) is no drafter), as the code line starts.
    DrafterCode("drafter call", None, Place.function, ("drafter.", "draft_worker.", "propose_draft_token_ids("),
                r"^(?:[\w.\[\], ]{1,80}=\s{0,4})?(?:return\s{1,4})?(?:self\.)?(?:model_runner\.)?(?:drafter|draft_worker)\."
                r"(?:dummy_run|propose|load_model|prepare_inputs\w{0,30}|prepare_next_token_ids\w{0,30}|forward_batch_generation|"
                r"forward_draft_extend\w{0,30}|capture_model|draft|verify)\(|"
                r"^(?:[\w.\[\], ]{1,80}=\s{0,4})?(?:return\s{1,4})?(?:self\.)?(?:\w{1,40}\.)?propose_draft_token_ids\(",
                "vllm/v1/worker/gpu_model_runner.py (_dummy_run: self.drafter.dummy_run; propose_draft_token_ids: "
                "self.drafter.propose), vllm_ascend/worker/model_runner_v1.py (sample_tokens: propose_draft_token_ids), "
                "python/sglang/srt/speculative/eagle_worker.py (self.draft_worker)",
                "a traceback's source line calling the engine's drafter"),
)

_COMPILED = tuple((row, re.compile(row.pattern)) for row in TABLE)
# The catalogue messages made from the table, by name: a hit of one is a line in an engine's drafting code.
DRAFTING_CODE = frozenset(row.name for row in TABLE)
# The row of the forward modes only drafting runs: a batch on the drafting path was being run (rules_message.py).
DRAFTING_MODE = next(row.name for row in TABLE if row.place is Place.mode)


@dataclass(frozen=True)
class Found:
    """A line in an engine's drafting code, and the row that placed it."""

    code: DrafterCode
    line: str


def drafting_place(lines: tuple[str, ...] | list[str]) -> Found | None:
    """The first of ``lines`` that is in an engine's drafting code by the table, or None."""
    for line in lines:
        text = line.strip()[:16384]
        for row, pattern in _COMPILED:
            if any(key in text for key in row.keys) and pattern.search(text):
                return Found(row, text)
    return None


# The words a drafter's own architecture or model type is named by, as one part of the name: Gemma 4's assistant
# drafter (transformers' model_type "gemma4_assistant", class Gemma4AssistantForCausalLM), the engines' MTP and NextN
# drafter classes (DeepSeekMTP, Glm4MoeMTP, DeepseekV3ForCausalLMNextN), EAGLE heads (EagleLlamaForCausalLM,
# LlamaForCausalLMEagle3), Medusa, DFlash / DSpark drafters. A part, not a substring: "beagle", "SMTP" are no drafter.
_DRAFTER_PARTS = frozenset({"assistant", "mtp", "nextn", "eagle", "eagle3", "medusa", "dflash", "dspark", "drafter"})
# NextN, and DFlash / DSpark in their own capitals (DFlash2Qwen3Model, DFlashQwen3DecoderLayer), which the split into
# parts below cuts as "D" + "Flash".
_NEXTN = re.compile(r"(?<![a-z])Next[Nn](?![a-z])|(?<![A-Za-z])nextn(?![a-z])|(?<![A-Za-z])D(?:Flash|Spark)(?![a-z])")
_NAME_PARTS = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z]|\d|\b|_)|[A-Z]?[a-z]+|[A-Z]+|\d+")


def drafter_architecture(name: str) -> bool:
    """Whether an architecture or model type's name is a drafter's (one of its parts, split at ``_ - .`` and case
    changes, is a drafter's word: "gemma4_assistant", "Glm4MoeMTP", "EagleLlamaForCausalLM")."""
    if len(name) > 200:
        return False
    parts = {p.lower() for p in _NAME_PARTS.findall(name)}
    return bool(parts & _DRAFTER_PARTS) or _NEXTN.search(name) is not None


# A name of the engine's drafting state, quoted in an exception's text as Python quotes the attribute, key or name it
# looked up (Objects/object.c: "'%.100s' object has no attribute '%U'"; KeyError's repr; NameError's "name '%U' is not
# defined"): vllm-ascend's ForwardContext.draft_attn_metadatas, vLLM's spec_decode_metadata, num_draft_tokens,
# draft_token_ids, the model runner's drafter, SGLang's draft_worker / eagle_use_aux_hidden_state. Read by the parts of
# the name (split at "_"), one of them a drafter's word: "drafts_folder" of a mail app is a name too, so only an engine's
# own exception asks (rules_message.py).
_QUOTED_IDENTIFIER = re.compile(r"'([A-Za-z_][A-Za-z0-9_]{0,100})'")
_DRAFTING_PART = re.compile(r"(?:^|_)(?:draft|drafter|drafts|drafted|eagle\d?|mtp|nextn|medusa|dflash|dspark|speculative|"
                            r"spec_decode)(?:_|$)", re.IGNORECASE)


def drafting_name(text: str) -> str | None:
    """The first name quoted in an exception's ``text`` whose parts name the engine's drafting state, or None."""
    for found in _QUOTED_IDENTIFIER.finditer(text[:4000]):
        if _DRAFTING_PART.search(found.group(1)):
            return found.group(1)
    return None


class Drafter(Word):
    """Which drafter a run set (a report names it: a crash on EAGLE3's path is not "the MTP path")."""

    mtp = "MTP"
    eagle3 = "EAGLE3"
    eagle = "EAGLE"
    dflash = "DFlash"
    dspark = "DSpark"
    medusa = "Medusa"
    ngram = "n-gram"
    suffix = "suffix decoding"
    draft_model = "a draft model"


# A setting's value or a drafter file's name, by its words, most specific first (llama.cpp's --spec-type values
# draft-mtp / draft-eagle3 / draft-dflash / draft-simple / ngram-*, vLLM's speculative_config methods "mtp",
# "deepseek_mtp", "eagle3", "dflash", "dspark", "medusa", "ngram", "suffix", "draft_model", SGLang's
# --speculative-algorithm EAGLE3 / NEXTN / NGRAM / STANDALONE / DFLASH).
_DRAFTER_WORDS = (
    (Drafter.mtp, re.compile(r"(?i)(?<![a-z])mtp(?![a-z])|next_?n|draft-mtp|_mtp\b|mtp[-_]")),
    (Drafter.eagle3, re.compile(r"(?i)eagle-?3")),
    (Drafter.eagle, re.compile(r"(?i)eagle")),
    (Drafter.dflash, re.compile(r"(?i)dflash")),
    (Drafter.dspark, re.compile(r"(?i)dspark")),
    (Drafter.medusa, re.compile(r"(?i)medusa")),
    (Drafter.ngram, re.compile(r"(?i)n-?gram|lookup")),
    (Drafter.suffix, re.compile(r"(?i)suffix")),
)


def drafter_named(name: str | None, otherwise: Drafter | None = Drafter.draft_model) -> Drafter | None:
    """The drafter a setting's value, a drafter file's or a frame's name says; ``otherwise`` where its words name none
    (a setting: a draft model, as draft-simple, STANDALONE or a plain -md GGUF are; a frame: None, common_speculative_draft
    runs every drafter)."""
    if name:
        for drafter, words in _DRAFTER_WORDS:
            if words.search(name[:300]):
                return drafter
    return otherwise
