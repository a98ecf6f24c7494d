package browser

// world returns where the scripts of call c run: the page of the tab, or
// the frame the session's frame scope names.
func (s *Session) world(c *call) (*world, error) {
	return &world{}, nil
}

// toViewport turns a point of the world's viewport into one of the tab's,
// for the mouse.
func (s *Session) toViewport(c *call, w *world, x, y float64) (float64, float64, error) {
	return x, y, nil
}
