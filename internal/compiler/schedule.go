package compiler

import (
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/schedule"
	"github.com/duet-test/duet/internal/step"
)

// maxSchedules bounds the schedules one suite declares.
const maxSchedules = 20

// schedules compiles a task's schedule: one schedule or a list of them,
// each a cron expression in a time zone or an interval, with the policies
// for missed and overlapping slots. Their next fire time is the first slot
// after now (applying keeps the stored one of an unchanged schedule).
//
//	schedule:
//	  - name: nightly
//	    cron: "0 2 * * *"
//	    timeZone: Europe/Paris
//	    missed: runOnce        # skip (default) | runOnce
//	    overlap: queue         # skip (default) | queue
//	  - every: 1h
func (c *compiler) schedules(n *step.Node) []*duet.Schedule {
	if n == nil || n.Type == step.NullNode {
		return nil
	}
	items := []*step.Node{n}
	if n.Type == step.SeqNode {
		items = n.Items
	}
	if len(items) > maxSchedules {
		c.Errf(n, "a task may declare at most %d schedules, got %d", maxSchedules, len(items))
		return nil
	}
	now := time.Now()
	var out []*duet.Schedule
	seen := map[string]*step.Node{}
	for _, it := range items {
		s := c.scheduleNode(it, now)
		if s == nil {
			continue
		}
		if prev, dup := seen[s.Name]; dup {
			c.Errf(it, "schedule name %q is already used by the schedule at line %d (give each a name)", s.Name, prev.Line)
			continue
		}
		seen[s.Name] = it
		out = append(out, s)
	}
	return out
}

func (c *compiler) scheduleNode(n *step.Node, now time.Time) *duet.Schedule {
	if n.Type != step.MapNode {
		c.Errf(n, "a schedule is a mapping (cron and timeZone, or every; name, missed, overlap), got %s", n.Type)
		return nil
	}
	before := c.NumErrors()
	c.AllowKeys(n, keyNames(scheduleKeys)...)
	expr := strings.TrimSpace(c.String(n, "cron", false))
	tz := strings.TrimSpace(c.String(n, "timeZone", false))
	var every time.Duration
	if e := strings.TrimSpace(c.String(n, "every", false)); e != "" {
		d, err := time.ParseDuration(e)
		if err != nil || d <= 0 {
			c.Errf(n.Get("every"), "every must be a duration such as 15m or 1h, got %q", e)
			return nil
		}
		every = d
	}
	if c.NumErrors() > before {
		return nil
	}
	t, err := schedule.Parse(expr, tz, every)
	if err != nil {
		at := n
		switch {
		case n.Get("every") != nil && expr == "":
			at = n.Get("every")
		case n.Get("timeZone") != nil && strings.Contains(duet.ErrorMessage(err), "zone"):
			at = n.Get("timeZone")
		case n.Get("cron") != nil:
			at = n.Get("cron")
		}
		c.Errf(at, "%s", duet.ErrorMessage(err))
		return nil
	}
	missed, overlap, err := schedule.Policies(c.String(n, "missed", false), c.String(n, "overlap", false))
	if err != nil {
		c.Errf(n, "%s", duet.ErrorMessage(err))
		return nil
	}
	s := &duet.Schedule{Name: strings.TrimSpace(c.String(n, "name", false)), Cron: expr, TimeZone: tz, Every: every,
		Missed: missed, Overlap: overlap, NextFireAt: t.Next(now)}
	if s.Name == "" {
		s.Name = schedule.DefaultName(s)
	}
	if tn := n.Get("tags"); tn != nil {
		if s.Tags = c.tags(n, nil); len(s.Tags) == 0 {
			s.Tags = nil
		}
		c.scheduleTags = append(c.scheduleTags, scheduleTag{node: tn, tags: s.Tags})
	}
	if len(s.Name) > 100 || strings.ContainsAny(s.Name, "\n\r\t") {
		c.Errf(n.Get("name"), "a schedule's name is one line of at most 100 characters")
		return nil
	}
	return s
}
