package engine

import (
	"context"

	"github.com/duet-test/duet"
)

func (cr *caseRun) proposeHealed(ctx context.Context, st *duet.Step, p *duet.AIPlan) (string, error) { return "", nil }
