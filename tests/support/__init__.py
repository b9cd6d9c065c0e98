"""What the tests share: our test drivers, client processes, harnesses and strategies."""
