// attention: grouped-query, causal (optionally sliding-window) attention of the stage's
// queries over the KV cache, scale 1 / sqrt(head_dim). Two bodies share AttentionLayout:
// AttentionDecodeTile for one-row, one-head tiles (decode: the key range split across the tile's
// lanes and combined on chip) and AttentionPrefillTile for several rows (flash attention on
// tensor cores). Both are templates on head_dim; the host picks the instantiation
// (executor/op_kind_table.cuh).
#pragma once

#include "executor/tiles/attention_decode.cuh"
#include "executor/tiles/attention_prefill.cuh"
