//go:build !mlwarden_sbatch

package sweep

// SetListBounds shrinks a Lister's listing bounds (pages of one listing,
// bytes of one page, bytes of all of them, names listed) for tests; 0
// keeps a default.
func SetListBounds(l *Lister, pages, page, bytes, names int) {
	l.bound = listBounds{pages, page, bytes, names}
}
