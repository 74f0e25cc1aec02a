package githubapp

// SetMaxPages lowers the page bound for a test and returns its undo.
func SetMaxPages(n int) func() {
	old := maxPages
	maxPages = n
	return func() { maxPages = old }
}
