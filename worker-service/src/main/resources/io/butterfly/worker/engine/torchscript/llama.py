# A Llama-family stage (Llama, Qwen2, Mistral), as Hugging Face transformers computes it in float32: RMSNorm,
# rotary embeddings (rotate_half convention), grouped-query attention and a SiLU-gated MLP.
#
# weights: per layer 14 tensors (LlamaStage.java lists them): input norm; q|k|v fused; o; post-attention norm;
# gate|up fused; down. Each projection is 3 tensors, as __torch__.butterfly.linear.prepare made them plus its bias
# (empty when none).


class LlamaStage(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool

  def prepare(self: __torch__.LlamaStage, weight: Tensor, dtype: int) -> List[Tensor]:
    return __torch__.butterfly.linear.prepare(weight, dtype)

  def embed(self: __torch__.LlamaStage, table: Tensor, ids: Tensor) -> Tensor:
    return torch.embedding(table, ids)

  def layers(self: __torch__.LlamaStage, x: Tensor, weights: List[Tensor], dims: List[int], eps: float, scale: float,
             cos: Tensor, signed_sin: Tensor, sequences: List[int], caches: List[Tensor]) -> Tensor:
    # dims: heads, kv heads, head dim, intermediate size. cos, signed_sin [rows, 1, head_dim]: the rotation of each
    # row's position, the sine negated on its first half so that rotate_half is a swap of halves.
    heads = dims[0]
    kv_heads = dims[1]
    head_dim = dims[2]
    inter = dims[3]
    rows = x.size(0)
    hidden = x.size(1)
    half = head_dim // 2
    masks = __torch__.butterfly.attention.causal_masks(sequences, heads // kv_heads)
    for layer in range(len(weights) // 14):
      w = weights[14 * layer:14 * layer + 14]
      h = torch.rms_norm(x, [hidden], w[0], eps)
      qkv = torch.view(__torch__.butterfly.linear.linear(h, w[1], w[2], w[3]), [rows, heads + 2 * kv_heads, head_dim])
      # q and k rotated together
      qk = qkv[:, :heads + kv_heads]
      swapped = torch.cat([qk[:, :, half:], qk[:, :, :half]], -1)
      qk = torch.add(torch.mul(qk, cos), torch.mul(swapped, signed_sin))
      q = torch.mul(qk[:, :heads], scale)
      attn = __torch__.butterfly.attention.attend(q, qk[:, heads:], qkv[:, heads + kv_heads:], sequences, caches,
                                                  layer, masks)
      x = torch.add(x, __torch__.butterfly.linear.linear(attn, w[4], w[5], w[6]))
      h = torch.rms_norm(x, [hidden], w[7], eps)
      gate_up = __torch__.butterfly.linear.linear(h, w[8], w[9], w[10])
      gate = gate_up[:, :inter]
      # silu(gate) as gate / (1 + exp(-gate)): torch's silu and sigmoid kernels round the elements past a thread's
      # last full vector by another formula, so a row's bits would depend on where the threads cut the batch
      act = torch.mul(torch.div(gate, torch.add(torch.exp(torch.neg(gate)), 1)), gate_up[:, inter:])
      x = torch.add(x, __torch__.butterfly.linear.linear(act, w[11], w[12], w[13]))
    return x

  def head(self: __torch__.LlamaStage, x: Tensor, rows: Tensor, norm: Tensor, w: List[Tensor], eps: float) -> Tensor:
    # Final norm and LM head over the given rows of x.
    h = torch.rms_norm(torch.index_select(x, 0, rows), [x.size(1)], norm, eps)
    return __torch__.butterfly.linear.linear(h, w[0], w[1], w[2])
