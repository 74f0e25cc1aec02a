package ghrepo

import "testing"

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"hive/t27": true, "Queen/T27": true, "a/b": true, "o-1/x.y_z-w": true,
		"": false, "hive": false, "hive/": false, "/t27": false, "-hive/t27": false,
		"hive/t27/x": false, "hive/..": false, "hive/.": false, "hive/a..b": false,
		"hive/t 27": false, "hive/t27\n": false,
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x":  true,  // 39
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x": false, // 40
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %t, want %t", s, got, want)
		}
		if (Check(s) == nil) != want {
			t.Errorf("Check(%q) disagrees with Valid", s)
		}
	}
}

func TestOneRepositoryWhateverItsCase(t *testing.T) {
	if Key("Queen/T27") != Key("queen/t27") || !Same("Queen/T27", "QUEEN/t27") || Same("queen/t27", "queen/t28") {
		t.Fatal("names differing only in case must be one repository, others not")
	}
	if o, n := Split("Queen/T27"); o != "Queen" || n != "T27" {
		t.Fatalf("Split kept %q %q, want the spelling given", o, n)
	}
}
