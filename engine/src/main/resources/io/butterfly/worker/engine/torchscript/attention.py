# Causal scaled dot-product attention of a packed batch, sequence by sequence, over each sequence's KV cache.
#
# sequences: (row offset, new tokens, position of the first) per sequence, flattened.
# caches: per sequence [layers, 2 (keys, values), kv_heads, capacity, head_dim], positions past the sequence unused.
# Grouped-query attention without copying keys: query head h uses kv head h // group (as Hugging Face's
# repeat_kv), so a sequence's queries [n, heads, d] are regrouped as [kv_heads, group * n, d] and multiplied by each
# kv head's keys directly. A sequence's shapes depend on it alone, whatever it is batched with.
# Written with one operation per step (narrow, select rather than [a:b] indexing, which slices every dimension):
# a decode step runs these per sequence and layer.


def causal_masks(sequences: List[int], group: int) -> List[Tensor]:
  # Per sequence, the additive mask [group * n, position + n] of a chunk of n > 1 new tokens (token t sees the keys
  # up to its own position); an empty tensor for a single token, which sees every cached key.
  masks = annotate(List[Tensor], [])
  for s in range(len(sequences) // 3):
    n = sequences[3 * s + 1]
    position = sequences[3 * s + 2]
    if n == 1:
      masks.append(torch.empty([0]))
    else:
      keys = torch.arange(position + n)
      last = torch.add(torch.arange(n), position)
      hidden = torch.gt(torch.unsqueeze(keys, 0), torch.unsqueeze(last, 1))
      mask = torch.masked_fill(torch.zeros([n, position + n]), hidden, -inf)
      masks.append(torch.repeat(mask, [group, 1]))
  return masks


def attend(q: Tensor, k: Tensor, v: Tensor, sequences: List[int], caches: List[Tensor], layer: int,
           masks: List[Tensor]) -> Tensor:
  # q [rows, heads, d], already scaled; k, v [rows, kv_heads, d]. Returns [rows, heads * d], padding rows zero.
  rows = q.size(0)
  heads = q.size(1)
  d = q.size(2)
  kv_heads = k.size(1)
  group = heads // kv_heads
  # [2, kv_heads, rows, d]: every row's new keys and values, as the caches hold them
  new = torch.transpose(torch.stack([k, v]), 1, 2)
  out = torch.empty([0])
  single = len(sequences) == 3 and sequences[1] == rows
  if not single:
    out = torch.zeros([rows, heads * d], dtype=q.dtype)
  for s in range(len(sequences) // 3):
    offset = sequences[3 * s]
    n = sequences[3 * s + 1]
    position = sequences[3 * s + 2]
    written = torch.narrow(torch.select(caches[s], 0, layer), 2, 0, position + n)
    torch.copy_(torch.narrow(written, 2, position, n), torch.narrow(new, 2, offset, n))
    keys = torch.select(written, 0, 0)
    values = torch.select(written, 0, 1)
    if n == 1:
      grouped = torch.view(torch.select(q, 0, offset), [kv_heads, group, d])
      scores = torch.bmm(grouped, torch.transpose(keys, 1, 2))
      o = torch.view(torch.bmm(torch.softmax(scores, -1), values), [1, heads * d])
    else:
      grouped = torch.reshape(torch.permute(torch.view(torch.narrow(q, 0, offset, n), [n, kv_heads, group, d]),
                                            [1, 2, 0, 3]), [kv_heads, group * n, d])
      scores = torch.add(torch.bmm(grouped, torch.transpose(keys, 1, 2)), masks[s])
      o = torch.bmm(torch.softmax(scores, -1), values)
      o = torch.reshape(torch.permute(torch.view(o, [kv_heads, group, n, d]), [2, 0, 1, 3]), [n, heads * d])
    if single:
      out = o
    else:
      torch.copy_(torch.narrow(out, 0, offset, n), o)
  return out
