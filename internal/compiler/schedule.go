package compiler

import (
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/schedule"
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
func (c *compiler) schedules(n *node) []*duet.Schedule {
	if n == nil || n.kind == kindNull {
		return nil
	}
	items := []*node{n}
	if n.kind == kindSeq {
		items = n.items
	}
	if len(items) > maxSchedules {
		c.errf(n, "a task may declare at most %d schedules, got %d", maxSchedules, len(items))
		return nil
	}
	now := time.Now()
	var out []*duet.Schedule
	seen := map[string]*node{}
	for _, it := range items {
		s := c.scheduleNode(it, now)
		if s == nil {
			continue
		}
		if prev, dup := seen[s.Name]; dup {
			c.errf(it, "schedule name %q is already used by the schedule at line %d (give each a name)", s.Name, prev.line)
			continue
		}
		seen[s.Name] = it
		out = append(out, s)
	}
	return out
}

func (c *compiler) scheduleNode(n *node, now time.Time) *duet.Schedule {
	if n.kind != kindMap {
		c.errf(n, "a schedule is a mapping (cron and timeZone, or every; name, missed, overlap), got %s", n.kind)
		return nil
	}
	before := len(c.diags)
	c.allowKeys(n, "name", "cron", "timeZone", "every", "missed", "overlap")
	expr := strings.TrimSpace(c.stringField(n, "cron", false))
	tz := strings.TrimSpace(c.stringField(n, "timeZone", false))
	var every time.Duration
	if e := strings.TrimSpace(c.stringField(n, "every", false)); e != "" {
		d, err := time.ParseDuration(e)
		if err != nil || d <= 0 {
			c.errf(n.get("every"), "every must be a duration such as 15m or 1h, got %q", e)
			return nil
		}
		every = d
	}
	if len(c.diags) > before {
		return nil
	}
	t, err := schedule.Parse(expr, tz, every)
	if err != nil {
		at := n
		switch {
		case n.get("every") != nil && expr == "":
			at = n.get("every")
		case n.get("timeZone") != nil && strings.Contains(duet.ErrorMessage(err), "zone"):
			at = n.get("timeZone")
		case n.get("cron") != nil:
			at = n.get("cron")
		}
		c.errf(at, "%s", duet.ErrorMessage(err))
		return nil
	}
	missed, overlap, err := schedule.Policies(c.stringField(n, "missed", false), c.stringField(n, "overlap", false))
	if err != nil {
		c.errf(n, "%s", duet.ErrorMessage(err))
		return nil
	}
	s := &duet.Schedule{Name: strings.TrimSpace(c.stringField(n, "name", false)), Cron: expr, TimeZone: tz, Every: every,
		Missed: missed, Overlap: overlap, NextFireAt: t.Next(now)}
	if s.Name == "" {
		s.Name = schedule.DefaultName(s)
	}
	if len(s.Name) > 100 || strings.ContainsAny(s.Name, "\n\r\t") {
		c.errf(n.get("name"), "a schedule's name is one line of at most 100 characters")
		return nil
	}
	return s
}
