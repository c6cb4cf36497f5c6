"""Writes a tiny random-weight llama GGUF model for the `openai:` suggester test.

usage: make_tiny_gguf.py OUT.gguf

A real llama-architecture model (2 layers, 64-wide, 4 heads) whose weights are random
(fixed seed: the same bytes every time) and whose tokenizer is a real SentencePiece-style
table in the metadata: <unk>, <s>, </s>, the 256 byte-fallback tokens and one token per
printable ASCII character (plus the word-start marker), so llama.cpp can tokenize any
prompt. Its answers are garbage, but deterministic at temperature 0. Needs the `gguf`
package (pinned in scripts/test) and numpy.
"""

import sys

import numpy as np
import gguf

CHARACTER_PIECES = [chr(c) for c in range(0x21, 0x7F)] + ["\u2581"]
N_EMBD = 64
N_HEAD = 4
N_LAYER = 2
N_FF = 128
N_CTX = 4096
SEED = 20261124


def vocabulary():
    """Tokens, scores and types: specials, byte fallbacks, then single characters."""
    tokens = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>")
        types.append(gguf.TokenType.BYTE)
    for piece in CHARACTER_PIECES:
        tokens.append(piece)
        types.append(gguf.TokenType.NORMAL)
    scores = [0.0] * len(tokens)
    return tokens, scores, types


def main(out):
    rng = np.random.default_rng(SEED)
    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)

    def weight(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name("nextedit-tiny-random")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    # numpy shapes are ggml's dimensions reversed: (rows, columns).
    writer.add_tensor("token_embd.weight", weight(n_vocab, N_EMBD))
    for layer in range(N_LAYER):
        blk = f"blk.{layer}"
        writer.add_tensor(f"{blk}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        writer.add_tensor(f"{blk}.attn_q.weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(f"{blk}.attn_k.weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(f"{blk}.attn_v.weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(f"{blk}.attn_output.weight", weight(N_EMBD, N_EMBD))
        writer.add_tensor(f"{blk}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        writer.add_tensor(f"{blk}.ffn_gate.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"{blk}.ffn_up.weight", weight(N_FF, N_EMBD))
        writer.add_tensor(f"{blk}.ffn_down.weight", weight(N_EMBD, N_FF))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("output.weight", weight(n_vocab, N_EMBD))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiny_gguf.py OUT.gguf")
    main(sys.argv[1])
