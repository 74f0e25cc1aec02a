// Package plural writes counts for people: "1 row", "2 rows".
package plural

import "strconv"

// Count is n with the noun that agrees with it: one for 1, many otherwise.
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Rows is Count for rows, the noun every table's summary counts.
func Rows(n int) string { return Count(n, "row", "rows") }
