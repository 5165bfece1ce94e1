package queues

// NewIDSource returns a function that hands out ids as NewID does, from a
// source of its own: a test of the sequence sees no ids other tests take.
func NewIDSource() func() int64 {
	var s idSource
	return s.id
}
