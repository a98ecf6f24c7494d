package engine

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/redact"
)

// maxOperandBytes bounds how much of one operand's value a failed
// assertion's message shows.
const maxOperandBytes = 200

// operands says what the parts of a failed assertion were, redacted as the
// run's saved variables are (a part read through a sensitive name is
// masked, sensitive keys inside a value too; the run's secrets are
// scrubbed from the message as from every message): `o.body.status is
// "paid"`. "" when there is nothing to add.
func (cr *caseRun) operands(src string) string {
	var parts []string
	for _, o := range eval.Operands(src, cr.vars) {
		var v any = redact.Mask
		if !slices.ContainsFunc(o.Names, redact.IsSensitiveKey) {
			v = redact.Value(o.Value)
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		s := string(b)
		if len(s) > maxOperandBytes {
			s = strings.ToValidUTF8(s[:maxOperandBytes], "") + "…"
		}
		parts = append(parts, o.Expr+" is "+s)
	}
	return strings.Join(parts, ", ")
}
