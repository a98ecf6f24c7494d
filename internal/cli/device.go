package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/client"
)

func deviceCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "device",
		Short: "The phones runs can use (Android over adb)",
		Long: `device lists the Android phones this machine's adb sees. A run uses one with
--device android:SERIAL, or any free one with --device android:any; a phone runs one
execution at a time, across every duet process on the same database.
See docs/devices.md.`,
	}
	var asJSON bool
	list := clientCmd(env, &cobra.Command{
		Use:   "list",
		Short: "List the phones adb sees: serial, state, model, Android version, and who uses each",
		Long: `list runs "adb devices -l" (DUET_ADB_PATH, default adb on PATH), reads each
ready phone's model and Android version with "adb shell getprop", and shows which are
in use by a run (a lease in the database). A phone that is not ready says why.`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string, c client.Client) error {
		list, err := c.ListDevices(cmd.Context())
		if err != nil {
			return err
		}
		rows := list.Devices
		if asJSON {
			return printJSON(env.Stdout, rows)
		}
		if len(rows) == 0 {
			fmt.Fprint(env.Stdout, `no Android device attached (adb devices -l lists none).
To use a phone: turn on Developer options and USB debugging on it, connect it by USB,
accept the "Allow USB debugging?" prompt, open Chrome once, and run duet device list again.
`)
			return nil
		}
		printTable(env.Stdout, "DEVICE\tSTATE\tMODEL\tANDROID\tIN USE", rows, func(r api.Device) string {
			ver := r.Android
			if r.SDK != "" {
				ver += " (API " + r.SDK + ")"
			}
			use := "-"
			if r.InUseBy != "" {
				use = "by " + r.InUseBy
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", r.Name, r.State, dash(r.Model), dash(ver), use)
		})
		for _, r := range rows {
			if r.Problem != "" {
				fmt.Fprintf(env.Stdout, "%s: %s\n", r.Serial, r.Problem)
			}
		}
		fmt.Fprintln(env.Stdout, "run a task on a phone: duet run TASK --device android:SERIAL (or android:any)")
		return nil
	})
	list.Flags().BoolVar(&asJSON, "json", false, "print the phones as JSON")
	return group(cmd, list)
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// deviceFlagHelp is the help of the --device flags.
var deviceFlagHelp = "where browser steps run: a preset (" + strings.Join(browser.DeviceNames(), ", ") +
	"), android:SERIAL or android:any (a phone: duet device list), or PRESET@ws://HOST:PORT (a remote browser); default: the task's"
