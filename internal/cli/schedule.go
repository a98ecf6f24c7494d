package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/client"
)

// The schedule commands are thin clients of the Service's schedule
// operations (the ones REST and the console call), with callSource cli.

func scheduleCmd(env Env) *cobra.Command {
	return group(&cobra.Command{
		Use:   "schedule",
		Short: "Run tasks on a schedule: add, list, pause, resume, remove",
		Long: `A schedule starts runs of a task at the slots of a cron expression (in a time
zone) or of an interval, as its owner — you — with your credentials. Every
"duet serve" and "duet worker" on the database runs the scheduler; each slot
fires once however many run. A suite can declare schedules too (schedule: on
its task, docs/suite-format.md).`,
	}, scheduleAddCmd(env), scheduleListCmd(env),
		schedulePauseCmd(env, "pause", "Pause a schedule (yours, or one of your task's)", true),
		schedulePauseCmd(env, "resume", "Resume a schedule from its next slot to come", false),
		scheduleRemoveCmd(env))
}

func scheduleAddCmd(env Env) *cobra.Command {
	var in api.ScheduleIn
	var asJSON bool
	cmd := clientCmd(env, &cobra.Command{
		Use:   "add TASK",
		Short: "Schedule runs of TASK: --cron EXPR [--tz ZONE] or --every DURATION",
		Example: `  duet schedule add shop --cron "0 2 * * *" --tz Europe/Paris --name nightly
  duet schedule add shop --every 1h --overlap queue`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		if (in.Cron == "") == (in.Every == "") {
			return usage("give --cron EXPR or --every DURATION, one of the two")
		}
		in.TaskID = args[0] // its id or its name: the service resolves it
		v, err := c.CreateSchedule(cmd.Context(), in)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, v)
		}
		fmt.Fprintf(env.Stdout, "schedule %s: %s of task %s as %s\n", v.ID, v.Timing, args[0], v.Owner)
		printNextFires(env.Stdout, v)
		return nil
	})
	cmd.Flags().StringVar(&in.Cron, "cron", "", `five cron fields, e.g. "0 2 * * *" (or @daily, @hourly)`)
	cmd.Flags().StringVar(&in.TimeZone, "tz", "", "IANA time zone the cron expression is read in (default UTC)")
	cmd.Flags().StringVar(&in.Every, "every", "", "an interval instead of cron, e.g. 15m, 1h (at least 1m)")
	cmd.Flags().StringVar(&in.Name, "name", "", "a name (default: the timing)")
	cmd.Flags().StringVar(&in.Missed, "missed", "", "slots missed while no instance ran: skip (default) or runOnce")
	cmd.Flags().StringVar(&in.Overlap, "overlap", "", "a slot while the previous run is unfinished: skip (default) or queue")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the schedule as JSON")
	return cmd
}

func printNextFires(w io.Writer, v api.ScheduleView) {
	if v.Paused {
		return
	}
	for _, at := range v.NextFires {
		fmt.Fprintf(w, "  next: %s\n", at)
	}
}

func scheduleListCmd(env Env) *cobra.Command {
	var task string
	cmd := jsonCmd(env, &cobra.Command{
		Use: "list", Short: "List the schedules of the tasks you can see, with their next fire times", Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client, asJSON bool) error {
		list, err := c.ListSchedules(cmd.Context(), api.ScheduleListIn{TaskID: task})
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(env.Stdout, list)
		}
		for _, v := range list.Schedules {
			state := "PAUSED"
			switch {
			case v.Paused && v.PausedReason != "":
				state += ": " + v.PausedReason
			case !v.Paused:
				state = "next " + v.NextFireAt.Local().Format("2006-01-02 15:04:05 MST")
			}
			fmt.Fprintf(env.Stdout, "%s  %-14s %s of task %s by %s (%s)  %s\n", v.ID, v.Name, v.Timing, v.TaskID, v.Owner, v.Source, state)
			if v.LastRunID != "" {
				fmt.Fprintf(env.Stdout, "  last run %s for the slot %s\n", v.LastRunID, v.LastFireAt.Local().Format(time.DateTime))
			}
			if v.LastError != "" {
				fmt.Fprintf(env.Stdout, "  note: %s\n", v.LastError)
			}
		}
		if len(list.Schedules) == 0 {
			fmt.Fprintf(env.Stdout, "no schedules visible to %s\n", c.User())
			noneVisible(cmd, env)
		}
		return nil
	})
	cmd.Flags().StringVar(&task, "task", "", "only the schedules of this task")
	return cmd
}

func schedulePauseCmd(env Env, verb, short string, pause bool) *cobra.Command {
	return clientCmd(env, &cobra.Command{
		Use: verb + " SCHEDULE_ID", Short: short, Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, c client.Client) error {
		op := c.ResumeSchedule
		if pause {
			op = c.PauseSchedule
		}
		v, err := op(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		if v.Paused {
			fmt.Fprintf(env.Stdout, "schedule %s is paused\n", v.ID)
			return nil
		}
		fmt.Fprintf(env.Stdout, "schedule %s is active\n", v.ID)
		printNextFires(env.Stdout, v)
		return nil
	})
}

func scheduleRemoveCmd(env Env) *cobra.Command {
	return argCmd(env, "remove SCHEDULE_ID", "Remove a schedule made by hand (a suite's goes with the suite)", client.Client.RemoveSchedule,
		func(_, id string) string { return "schedule " + id + " removed" })
}
