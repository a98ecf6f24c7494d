// Package schedule is Duet's scheduler: when a schedule's slots are (a cron
// expression in a time zone, or a fixed interval) and the loop that fires
// them. The parsing is robfig/cron's; the firing is Duet's own: a slot is
// claimed in the database in the transaction that creates its run
// (duet.StartRunParams.Fire), so it fires once however many instances run a
// scheduler, and a restart loses nothing (the next slot is stored).
package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/duet-test/duet"
)

// MinEvery is the shortest interval a schedule may have (the cron
// expressions' own granularity).
const MinEvery = time.Minute

// parser reads the five standard fields (minute, hour, day of month,
// month, day of week) and the descriptors (@daily, @hourly, ...).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Timing is when a schedule's slots are.
type Timing struct {
	spec  cron.Schedule
	loc   *time.Location
	every time.Duration
}

// Parse checks a schedule's timing: a cron expression read in the time zone
// tz (an IANA name, "" for UTC), or an interval every, exactly one. Returns
// INVALID_ARGUMENT naming what is wrong.
func Parse(expr, tz string, every time.Duration) (*Timing, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "" && every == 0:
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a schedule needs cron (e.g. \"0 2 * * *\") or every (e.g. 1h)")
	case expr != "" && every != 0:
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a schedule has cron or every, not both")
	case every != 0:
		if tz != "" {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "timeZone applies to cron only: an interval (every) is the same in every zone")
		}
		if every < MinEvery || every%time.Second != 0 {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "every must be whole seconds and at least %s, got %s", MinEvery, every)
		}
		return &Timing{every: every}, nil
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "give the time zone as timeZone, not inside the cron expression")
	}
	if strings.HasPrefix(expr, "@every") {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "write an interval as every (e.g. every: 1h), not @every")
	}
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil || tz == "Local" {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "unknown time zone %q (an IANA name such as Europe/Paris)", tz)
		}
	}
	spec, err := parser.Parse(expr)
	if err != nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "cron %q: %v (five fields: minute hour day-of-month month day-of-week)", expr, err)
	}
	if s, ok := spec.(*cron.SpecSchedule); ok {
		s.Location = loc // the parser defaults to the machine's zone
	}
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "cron %q never fires", expr)
	}
	return &Timing{spec: spec, loc: loc}, nil
}

// Of is the timing of a stored schedule.
func Of(s *duet.Schedule) (*Timing, error) { return Parse(s.Cron, s.TimeZone, s.Every) }

// Next is the first slot after t.
func (t *Timing) Next(after time.Time) time.Time {
	if t.every > 0 {
		return after.Truncate(time.Second).Add(t.every)
	}
	return t.spec.Next(after).UTC()
}

// maxWalk bounds the slots walked over to find the last one missed.
const maxWalk = 100_000

// Span is where now stands among the slots from slot on: latest is the
// last slot at or before now (slot itself when none later is), next the
// first after now, and missed how many slots from slot to latest there are
// beyond the first.
func (t *Timing) Span(slot, now time.Time) (latest, next time.Time, missed int) {
	if now.Before(slot) {
		return slot, slot, 0
	}
	if t.every > 0 {
		k := now.Sub(slot) / t.every
		latest = slot.Add(k * t.every)
		return latest, latest.Add(t.every), int(k)
	}
	latest, next = slot, t.Next(slot)
	for !next.After(now) {
		if missed == maxWalk {
			return latest, t.Next(now), missed
		}
		latest, next, missed = next, t.Next(next), missed+1
	}
	return latest, next, missed
}

// Describe is a schedule's timing in words for lists: "cron 0 2 * * *
// (Europe/Paris)" or "every 1h0m0s".
func Describe(s *duet.Schedule) string {
	if s.Every > 0 {
		return "every " + s.Every.String()
	}
	tz := s.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("cron %s (%s)", s.Cron, tz)
}

// DefaultName is the name a schedule gets when none is given.
func DefaultName(s *duet.Schedule) string {
	if s.Every > 0 {
		d := s.Every.String()
		if strings.HasSuffix(d, "m0s") {
			d = strings.TrimSuffix(d, "0s")
		}
		if strings.HasSuffix(d, "h0m") {
			d = strings.TrimSuffix(d, "0m")
		}
		return "every " + d
	}
	return s.Cron
}

// Policies checks and defaults a schedule's policies. Returns
// INVALID_ARGUMENT.
func Policies(missed, overlap string) (duet.MissedPolicy, duet.OverlapPolicy, error) {
	m, err := policy("missed", missed, duet.MissedSkip, duet.MissedRunOnce)
	if err != nil {
		return "", "", err
	}
	o, err := policy("overlap", overlap, duet.OverlapSkip, duet.OverlapQueue)
	if err != nil {
		return "", "", err
	}
	return m, o, nil
}

// policy reads the policy named name: empty is def, else it must be def or
// other. Returns INVALID_ARGUMENT.
func policy[P ~string](name, v string, def, other P) (P, error) {
	switch P(v) {
	case "":
		return def, nil
	case def, other:
		return P(v), nil
	}
	return "", duet.Errorf(duet.CodeInvalidArgument, "%s must be %s or %s, got %q", name, def, other, v)
}
