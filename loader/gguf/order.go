package gguf

import (
	"cmp"
	"slices"
	"strings"
)

// The names the use order knows (see the package documentation), each
// list in the order llama.cpp's graphs use them.
var (
	inputNames = []string{"token_embd", "token_types", "position_embd", "token_embd_norm", "rope_freqs", "rope_factors_long", "rope_factors_short"}
	blockNames = []string{
		"attn_norm", "attn_norm_2", "attn_qkv", "attn_q", "attn_q_norm", "attn_v", "attn_k", "attn_k_norm",
		"attn_output", "attn_out_norm", "attn_post_norm",
		"ffn_norm", "ffn_gate_inp", "ffn_gate", "ffn_gate_exps", "ffn_up", "ffn_up_exps", "ffn_down", "ffn_down_exps",
		"ffn_gate_inp_shexp", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "ffn_post_norm", "layer_output_norm",
	}
	outputNames = []string{"output_norm", "output"}
)

// The groups of the use order.
const (
	groupInput = iota
	groupBlock
	groupOutput
	groupOther
)

// orderKey is where a tensor sorts in the use order; ties keep file order.
type orderKey struct {
	group int
	layer int64
	rank  int // position of the base name in its list; unknown names after
	kind  int // .weight, .bias, other suffixes
}

// useOrder returns the indices of ts in use order.
func useOrder(ts []TensorInfo) []int {
	keys := make([]orderKey, len(ts))
	order := make([]int, len(ts))
	for i := range ts {
		keys[i] = keyOf(ts[i].Name)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		return cmp.Or(cmp.Compare(ka.group, kb.group), cmp.Compare(ka.layer, kb.layer),
			cmp.Compare(ka.rank, kb.rank), cmp.Compare(ka.kind, kb.kind))
	})
	return order
}

// keyOf sorts a tensor by its name.
func keyOf(name string) orderKey {
	if rest, ok := strings.CutPrefix(name, "blk."); ok {
		if n, rest, ok := layerNumber(rest); ok {
			base, kind := splitSuffix(rest)
			return orderKey{group: groupBlock, layer: n, rank: rank(blockNames, base), kind: kind}
		}
		return orderKey{group: groupOther}
	}
	base, kind := splitSuffix(name)
	if r := rank(inputNames, base); r < len(inputNames) {
		return orderKey{group: groupInput, rank: r, kind: kind}
	}
	if r := rank(outputNames, base); r < len(outputNames) {
		return orderKey{group: groupOutput, rank: r, kind: kind}
	}
	return orderKey{group: groupOther}
}

// layerNumber reads the decimal N and the dot of "N.rest".
func layerNumber(s string) (n int64, rest string, ok bool) {
	i := 0
	for i < len(s) && i < 18 && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int64(s[i]-'0')
		i++
	}
	if i == 0 || i >= len(s) || s[i] != '.' {
		return 0, "", false
	}
	return n, s[i+1:], true
}

// splitSuffix splits "base.weight" (kind 0), "base.bias" (kind 1) and
// "base.other" (kind 2); a name without a dot is its own base (kind 2).
func splitSuffix(s string) (base string, kind int) {
	if b, ok := strings.CutSuffix(s, ".weight"); ok {
		return b, 0
	}
	if b, ok := strings.CutSuffix(s, ".bias"); ok {
		return b, 1
	}
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[:i], 2
	}
	return s, 2
}

// rank returns the position of name in names, or len(names).
func rank(names []string, name string) int {
	if i := slices.Index(names, name); i >= 0 {
		return i
	}
	return len(names)
}
