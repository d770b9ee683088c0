# A Llama-family stage (Llama, Qwen2, Mistral, Qwen3, Mixtral, Qwen2-MoE, Qwen3-MoE), as Hugging Face transformers
# computes it in float32: RMSNorm, rotary embeddings (rotate_half convention), grouped-query attention (Qwen3: each
# query and key head RMS-normed first) and a SiLU-gated MLP, or a mixture of experts of them.
#
# weights: per layer (LlamaStage.java lists them): input norm; q|k|v fused; o; post-attention norm; with q/k norms,
# the q and k norm weights; then a dense MLP (gate|up fused; down), or the router, each expert's gate|up and down, and
# Qwen2-MoE's shared expert (gate|up; down; its gate). Each projection is 3 tensors, as
# __torch__.butterfly.linear.prepare made them plus its bias (empty when none).
# layout: per layer, where its weights start and how many experts it has (0: a dense MLP).
# constants: 0-dim float32 tensors [attention scale, 1, norm epsilon, hidden size, head dim]: an operation with a
# Python number converts it to a tensor on every call.


def rms_norm(x: Tensor, weight: Tensor, constants: List[Tensor]) -> Tensor:
  # weight * (x * rsqrt(mean(x^2) + eps)), the mean as torch computes it (a sum, then a division by the count)
  variance = torch.div(torch.sum(torch.mul(x, x), [-1], True), constants[3])
  return torch.mul(weight, torch.mul(x, torch.rsqrt(torch.add(variance, constants[2]))))


def head_norm(x: Tensor, weight: Tensor, constants: List[Tensor]) -> Tensor:
  # rms_norm of each head [rows, heads, head dim] over its head dim (Qwen3's q_norm, k_norm)
  variance = torch.div(torch.sum(torch.mul(x, x), [-1], True), constants[4])
  return torch.mul(weight, torch.mul(x, torch.rsqrt(torch.add(variance, constants[2]))))


def mlp(x: Tensor, w: List[Tensor], at: int, constants: List[Tensor]) -> Tensor:
  # down(silu(gate x) * up x) of the gate|up projection at w[at] and the down one after it, silu as gate / (1 +
  # exp(-gate)): torch's silu and sigmoid kernels round the elements past a thread's last full vector by another
  # formula, so a row's bits would depend on where the threads cut the batch
  scope = __torch__.butterfly.profile.enter("projection gate|up")
  gate_up = __torch__.butterfly.linear.linear(x, w[at], w[at + 1], w[at + 2])
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("activation")
  inter = gate_up.size(1) // 2
  gate = torch.narrow(gate_up, 1, 0, inter)
  act = torch.mul(torch.div(gate, torch.add(torch.exp(torch.neg(gate)), constants[1])), torch.narrow(gate_up, 1, inter, inter))
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("projection down")
  down = __torch__.butterfly.linear.linear(act, w[at + 3], w[at + 4], w[at + 5])
  __torch__.butterfly.profile.exit(scope)
  return down


def route(logits: Tensor, top_k: int, normalize: bool) -> List[Tensor]:
  # [weights, experts], each [rows, top_k]: softmax of the router's logits over all experts (float32), the top k
  # heaviest first (of equal weights the lower expert first: a stable descending sort), the weights divided by their
  # sum when normalize (Mixtral always; Qwen's norm_topk_prob)
  ranked, order = torch.sort(torch.softmax(logits, -1), stable=True, dim=-1, descending=True)
  weights = torch.narrow(ranked, 1, 0, top_k)
  if normalize:
    weights = torch.div(weights, torch.sum(weights, [-1], True))
  return [weights, torch.narrow(order, 1, 0, top_k)]


def expert_group(h: Tensor, w: List[Tensor], at: int, first: int, count: int, chosen: Tensor, flat_weights: Tensor,
                 top_k: int, quantum: int, constants: List[Tensor]) -> Tensor:
  # The routed experts [first, first + count) (their weights from w[at], 6 tensors each) over rows h that chose them
  # (chosen [rows, top_k], their weights flat [rows * top_k]): each expert run on the rows that chose it and its output,
  # times the row's weight for it, added to zeros in the order of the experts. A group of experts on another worker
  # computes this over the rows sent to it; the groups' sums are then merged by the reduction tree.
  # An expert's rows are padded to a multiple of quantum (the projections' row quantum), so that a row's bits never
  # depend on which other rows chose the same expert.
  out = torch.zeros_like(h)
  for e in range(first, first + count):
    hits = torch.nonzero(torch.eq(chosen, e))
    n = hits.size(0)
    if n > 0:
      rows = torch.select(hits, 1, 0)
      x = torch.index_select(h, 0, rows)
      pad = (quantum - n % quantum) % quantum
      if pad > 0:
        x = torch.cat([x, torch.zeros([pad, h.size(1)], dtype=h.dtype)])
      y = __torch__.mlp(x, w, at + 6 * (e - first), constants)
      if pad > 0:
        y = torch.narrow(y, 0, 0, n)
      scale = torch.index_select(flat_weights, 0, torch.add(torch.mul(rows, top_k), torch.select(hits, 1, 1)))
      out = torch.index_add(out, 0, rows, torch.mul(y, torch.unsqueeze(scale, 1)))
  return out


def router(h: Tensor, w: List[Tensor], at: int, dims: List[int]) -> List[Tensor]:
  # [weights flat [rows * top_k], chosen [rows, top_k]]: route (renormalized if dims[6]) of the router at w[at]
  scope = __torch__.butterfly.profile.enter("router")
  routed = __torch__.route(__torch__.butterfly.linear.linear(h, w[at], w[at + 1], w[at + 2]), dims[5], dims[6] == 1)
  __torch__.butterfly.profile.exit(scope)
  return [torch.flatten(routed[0]), routed[1]]


def shared_expert(h: Tensor, routed: Tensor, w: List[Tensor], at: int, dims: List[int], constants: List[Tensor]) -> Tensor:
  # routed plus Qwen2-MoE's shared expert (its MLP at w[at]) times sigmoid(its gate at w[at + 6]), when dims[7]
  if dims[7] == 1:
    shared = __torch__.mlp(h, w, at, constants)
    # the gate [1, hidden] as a row-wise dot product: a one-column projection rounds a row by how many share it
    logit = torch.sum(torch.mul(h, w[at + 6]), [-1], True)
    gate = torch.reciprocal(torch.add(torch.exp(torch.neg(logit)), constants[1]))
    return torch.add(routed, torch.mul(gate, shared))
  return routed


def experts(h: Tensor, w: List[Tensor], at: int, count: int, dims: List[int], constants: List[Tensor]) -> Tensor:
  # A sparse MLP as transformers' MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock, all its
  # experts here: the router's choice, the experts' weighted outputs added in the order of the experts, then
  # Qwen2-MoE's shared expert.
  routed = __torch__.router(h, w, at, dims)
  out = __torch__.expert_group(h, w, at + 3, 0, count, routed[1], routed[0], dims[5], dims[8], constants)
  return __torch__.shared_expert(h, out, w, at + 3 + 6 * count, dims, constants)


def attention_block(x: Tensor, w: List[Tensor], dims: List[int], constants: List[Tensor], cos: Tensor,
                    signed_sin: Tensor, sequences: List[int], caches: List[Tensor], layer: int,
                    masks: List[Tensor]) -> List[Tensor]:
  # [x + attention(norm(x)), the post-attention norm of that]: a layer up to its MLP
  heads = dims[0]
  kv_heads = dims[1]
  head_dim = dims[2]
  rows = x.size(0)
  scope = __torch__.butterfly.profile.enter("norm")
  h = __torch__.rms_norm(x, w[0], constants)
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("projection q|k|v")
  qkv = torch.view(__torch__.butterfly.linear.linear(h, w[1], w[2], w[3]), [rows, heads + 2 * kv_heads, head_dim])
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("rotary")
  # q and k rotated together: x * cos + swap_halves(x) * signed_sin
  qk = torch.narrow(qkv, 1, 0, heads + kv_heads)
  if dims[4] == 1:
    qk = torch.cat([__torch__.head_norm(torch.narrow(qkv, 1, 0, heads), w[8], constants),
                    __torch__.head_norm(torch.narrow(qkv, 1, heads, kv_heads), w[9], constants)], 1)
  swapped = torch.view(torch.flip(torch.view(qk, [rows, heads + kv_heads, 2, head_dim // 2]), [2]),
                       [rows, heads + kv_heads, head_dim])
  qk = torch.add(torch.mul(qk, cos), torch.mul(swapped, signed_sin))
  q = torch.mul(torch.narrow(qk, 1, 0, heads), constants[0])
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("attention")
  attn = __torch__.butterfly.attention.attend(q, torch.narrow(qk, 1, heads, kv_heads),
                                              torch.narrow(qkv, 1, heads + kv_heads, kv_heads), sequences, caches,
                                              layer, masks)
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("projection o")
  o = __torch__.butterfly.linear.linear(attn, w[4], w[5], w[6])
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("residual")
  x = torch.add(x, o)
  __torch__.butterfly.profile.exit(scope)
  scope = __torch__.butterfly.profile.enter("norm")
  h = __torch__.rms_norm(x, w[7], constants)
  __torch__.butterfly.profile.exit(scope)
  return [x, h]


def layer_weights(weights: List[Tensor], layout: List[int], layer: int) -> List[Tensor]:
  end = len(weights)
  if layer + 1 < len(layout) // 2:
    end = layout[2 * layer + 2]
  return weights[layout[2 * layer]:end]


class LlamaStage(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool

  def prepare(self: __torch__.LlamaStage, weight: Tensor, dtype: int) -> List[Tensor]:
    return __torch__.butterfly.linear.prepare(weight, dtype)

  def route(self: __torch__.LlamaStage, logits: Tensor, top_k: int, normalize: bool) -> List[Tensor]:
    return __torch__.route(logits, top_k, normalize)

  def embed(self: __torch__.LlamaStage, table: Tensor, ids: Tensor) -> Tensor:
    return torch.embedding(table, ids)

  def layers(self: __torch__.LlamaStage, x: Tensor, weights: List[Tensor], layout: List[int], dims: List[int],
             constants: List[Tensor], cos: Tensor, signed_sin: Tensor, sequences: List[int],
             caches: List[Tensor]) -> Tensor:
    # dims: heads, kv heads, head dim, intermediate size, q/k norms (1 or 0), experts per token, renormalize (1 or 0),
    # shared expert (1 or 0), row quantum. cos, signed_sin [rows, 1, head_dim]: the rotation of each row's position,
    # the sine negated on its first half so that rotate_half is a swap of halves.
    mlp_at = 8
    if dims[4] == 1:
      mlp_at = 10
    scope = __torch__.butterfly.profile.enter("attention")
    masks = __torch__.butterfly.attention.causal_masks(sequences, dims[0] // dims[1])
    __torch__.butterfly.profile.exit(scope)
    n_layers = len(layout) // 2
    for layer in range(n_layers):
      w = __torch__.layer_weights(weights, layout, layer)
      in_layer = __torch__.butterfly.profile.enter_layer(layer)
      xh = __torch__.attention_block(x, w, dims, constants, cos, signed_sin, sequences, caches, layer, masks)
      x = xh[0]
      h = xh[1]
      count = layout[2 * layer + 1]
      if count == 0:
        down = __torch__.mlp(h, w, mlp_at, constants)
      else:
        scope = __torch__.butterfly.profile.enter("experts")
        down = __torch__.experts(h, w, mlp_at, count, dims, constants)
        __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("residual")
      x = torch.add(x, down)
      __torch__.butterfly.profile.exit(scope)
      __torch__.butterfly.profile.exit(in_layer)
    return x

  # A stage whose experts are spread over workers runs a layer in three calls (LlamaStage.java): layer_front, the
  # expert groups (its own by expert_group, the others' on their workers), layer_back on the merged sum.

  def layer_front(self: __torch__.LlamaStage, x: Tensor, weights: List[Tensor], layout: List[int], layer: int,
                  dims: List[int], constants: List[Tensor], cos: Tensor, signed_sin: Tensor, sequences: List[int],
                  caches: List[Tensor]) -> List[Tensor]:
    # [x after attention, its post-attention norm h], and for a sparse layer the router's [weights flat, chosen]
    mlp_at = 8
    if dims[4] == 1:
      mlp_at = 10
    masks = __torch__.butterfly.attention.causal_masks(sequences, dims[0] // dims[1])
    w = __torch__.layer_weights(weights, layout, layer)
    xh = __torch__.attention_block(x, w, dims, constants, cos, signed_sin, sequences, caches, layer, masks)
    if layout[2 * layer + 1] == 0:
      return xh
    routed = __torch__.router(xh[1], w, mlp_at, dims)
    return [xh[0], xh[1], routed[0], routed[1]]

  def layer_group(self: __torch__.LlamaStage, h: Tensor, weights: List[Tensor], layout: List[int], layer: int,
                  first: int, chosen: Tensor, flat_weights: Tensor, dims: List[int], constants: List[Tensor]) -> Tensor:
    # this stage's own expert group (experts first.. of the layer's layout count) over h
    mlp_at = 8
    if dims[4] == 1:
      mlp_at = 10
    w = __torch__.layer_weights(weights, layout, layer)
    return __torch__.expert_group(h, w, mlp_at + 3, first, layout[2 * layer + 1], chosen, flat_weights, dims[5],
                                  dims[8], constants)

  def layer_back(self: __torch__.LlamaStage, x: Tensor, h: Tensor, routed: Tensor, weights: List[Tensor],
                 layout: List[int], layer: int, dims: List[int], constants: List[Tensor]) -> Tensor:
    # x plus the layer's MLP: the dense one over h, or routed (the groups' merged sum) and the shared expert
    mlp_at = 8
    if dims[4] == 1:
      mlp_at = 10
    w = __torch__.layer_weights(weights, layout, layer)
    count = layout[2 * layer + 1]
    if count == 0:
      return torch.add(x, __torch__.mlp(h, w, mlp_at, constants))
    return torch.add(x, __torch__.shared_expert(h, routed, w, mlp_at + 3 + 6 * count, dims, constants))

  def experts_only(self: __torch__.LlamaStage, h: Tensor, weights: List[Tensor], at: int, first: int, count: int,
                   chosen: Tensor, flat_weights: Tensor, top_k: int, quantum: int, constants: List[Tensor]) -> Tensor:
    # a worker holding an expert group for another's stage: its experts [first, first + count) at weights[at]
    return __torch__.expert_group(h, weights, at, first, count, chosen, flat_weights, top_k, quantum, constants)

  # Head parallelism (docs/sharding.md, "Head parallelism"): a worker holding slices of a layer (HeadShard.java)
  # computes each slice's partial apart, so that a slice's bits do not depend on which worker computes it or with which
  # other slices. A shard's weights per layer, from at: the input norm, the post-attention norm, the q and k norms if
  # any (dims[4]), then per slice 12 tensors: q|k|v of its heads (its query heads and its one key/value head), its
  # columns of o_proj, its rows of gate|up, its columns of down_proj. dims as layers' with dims[1] the layer's key/value
  # heads (the slices).

  def slice_attention(self: __torch__.LlamaStage, x: Tensor, weights: List[Tensor], at: int, slices: int,
                      dims: List[int], constants: List[Tensor], cos: Tensor, signed_sin: Tensor, sequences: List[int],
                      caches: List[Tensor], layer: int) -> List[Tensor]:
    # Per slice, [rows, hidden]: its heads' attention over the input norm of x, through its columns of o_proj.
    # caches: per sequence, per slice (sequence-major) [layers, 2, 1, capacity, head dim].
    group = dims[0] // dims[1]
    head_dim = dims[2]
    rows = x.size(0)
    norms = 2
    if dims[4] == 1:
      norms = 4
    masks = __torch__.butterfly.attention.causal_masks(sequences, group)
    h = __torch__.rms_norm(x, weights[at], constants)
    n_seq = len(sequences) // 3
    out = annotate(List[Tensor], [])
    for s in range(slices):
      w = at + norms + 12 * s
      qkv = torch.view(__torch__.butterfly.linear.linear(h, weights[w], weights[w + 1], weights[w + 2]),
                       [rows, group + 2, head_dim])
      qk = torch.narrow(qkv, 1, 0, group + 1)
      if dims[4] == 1:
        qk = torch.cat([__torch__.head_norm(torch.narrow(qkv, 1, 0, group), weights[at + 2], constants),
                        __torch__.head_norm(torch.narrow(qkv, 1, group, 1), weights[at + 3], constants)], 1)
      swapped = torch.view(torch.flip(torch.view(qk, [rows, group + 1, 2, head_dim // 2]), [2]),
                           [rows, group + 1, head_dim])
      qk = torch.add(torch.mul(qk, cos), torch.mul(swapped, signed_sin))
      q = torch.mul(torch.narrow(qk, 1, 0, group), constants[0])
      own = annotate(List[Tensor], [])
      for i in range(n_seq):
        own.append(caches[i * slices + s])
      attn = __torch__.butterfly.attention.attend(q, torch.narrow(qk, 1, group, 1), torch.narrow(qkv, 1, group + 1, 1),
                                                  sequences, own, layer, masks)
      out.append(__torch__.butterfly.linear.linear(attn, weights[w + 3], weights[w + 4], weights[w + 5]))
    return out

  def slice_mlp(self: __torch__.LlamaStage, x: Tensor, weights: List[Tensor], at: int, slices: int, dims: List[int],
                constants: List[Tensor]) -> List[Tensor]:
    # Per slice, [rows, hidden]: its MLP columns over the post-attention norm of x, through its columns of down_proj
    norms = 2
    if dims[4] == 1:
      norms = 4
    h = __torch__.rms_norm(x, weights[at + 1], constants)
    out = annotate(List[Tensor], [])
    for s in range(slices):
      out.append(__torch__.mlp(h, weights, at + norms + 12 * s + 6, constants))
    return out

  def head(self: __torch__.LlamaStage, x: Tensor, rows: Tensor, norm: Tensor, w: List[Tensor],
           constants: List[Tensor]) -> Tensor:
    # Final norm and LM head over the given rows of x.
    scope = __torch__.butterfly.profile.enter("norm")
    h = __torch__.rms_norm(torch.index_select(x, 0, rows), norm, constants)
    __torch__.butterfly.profile.exit(scope)
    scope = __torch__.butterfly.profile.enter("projection head")
    logits = __torch__.butterfly.linear.linear(h, w[0], w[1], w[2])
    __torch__.butterfly.profile.exit(scope)
    return logits
