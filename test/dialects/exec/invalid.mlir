// RUN: braid-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the exec dialect's training fields, one case per message.

// A weight's init is "zeros" or absent.
exec.plan @p mesh(["world"], [1]) arena 64 events 0 {
  exec.buffer @w offset 0 : tensor<4xf32>
  // expected-error @+1 {{'exec.weight' op init must be "zeros" (absent: read from the weights file), got "ones"}}
  exec.weight "w" @w full [4] sharding [[]] init "ones"
}

// -----

// Every entry of `training` is known.
// expected-error @+1 {{'exec.plan' op training has an unknown entry 'epochs' (it has tokens, labels, loss, batch, sequence, steps, algorithm, ran)}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 1 : i64, epochs = 2 : i64} {
}

// -----

// Steps per call are positive; the algorithm is one braid-run knows.
// expected-error @+1 {{'exec.plan' op training 'steps' must be a positive integer}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 1 : i64, steps = 0 : i64} {
}

// -----

// expected-error @+1 {{'exec.plan' op training 'algorithm' must be "cocod-sgd" or "acco"}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 1 : i64, algorithm = "diloco"} {
}

// -----

// The binding names are strings.
// expected-error @+1 {{'exec.plan' op training needs the string 'loss'}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", batch = 1 : i64, sequence = 1 : i64} {
}

// -----

// The batch shape is positive.
// expected-error @+1 {{'exec.plan' op training needs a positive integer 'sequence'}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 0 : i64} {
}

// -----

// The tokens name an exec.input.
// expected-error @+1 {{'exec.plan' op training tokens "t" is not an exec.input of the plan}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 2 : i64} {
}

// -----

// Labels have their own input.
// expected-error @+1 {{'exec.plan' op training labels "t" is also the tokens input; labels need their own}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "t", loss = "x", batch = 1 : i64, sequence = 2 : i64} {
  exec.buffer @t offset 0 : tensor<1x2xi64>
  exec.input "t" @t
}

// -----

// The token inputs are [batch, sequence] of i64 or i32.
// expected-error @+1 {{'exec.plan' op training labels input "l" is 'tensor<1x2xf32>', not [batch, sequence] = [1, 2] of i64 or i32}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 2 : i64} {
  exec.buffer @t offset 0 : tensor<1x2xi64>
  exec.buffer @l offset 16 : tensor<1x2xf32>
  exec.input "t" @t
  exec.input "l" @l
}

// -----

// The loss names an exec.output.
// expected-error @+1 {{'exec.plan' op training loss "x" is not an exec.output of the plan}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 2 : i64} {
  exec.buffer @t offset 0 : tensor<1x2xi64>
  exec.buffer @l offset 16 : tensor<1x2xi32>
  exec.input "t" @t
  exec.input "l" @l
}

// -----

// The loss is a scalar f32.
// expected-error @+1 {{'exec.plan' op training loss output "x" is 'tensor<1xf32>', not a scalar f32}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 2 : i64} {
  exec.buffer @t offset 0 : tensor<1x2xi64>
  exec.buffer @l offset 16 : tensor<1x2xi32>
  exec.buffer @x offset 32 : tensor<1xf32>
  exec.input "t" @t
  exec.input "l" @l
  exec.output "x" @x
}

// -----

// Several steps per call: tokens and labels hold steps * batch rows.
// expected-error @+1 {{'exec.plan' op training tokens input "t" is 'tensor<1x2xi64>', not [steps * batch, sequence] = [2, 2] of i64 or i32}}
exec.plan @p mesh(["world"], [1]) arena 64 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 2 : i64, steps = 2 : i64} {
  exec.buffer @t offset 0 : tensor<1x2xi64>
  exec.buffer @l offset 16 : tensor<2x2xi32>
  exec.buffer @x offset 32 : tensor<2xf32>
  exec.input "t" @t
  exec.input "l" @l
  exec.output "x" @x
}

// -----

// ... and the loss has one entry per step.
// expected-error @+1 {{'exec.plan' op training loss output "x" is 'tensor<f32>', not f32 [steps]}}
exec.plan @p mesh(["world"], [1]) arena 128 events 0 training {tokens = "t", labels = "l", loss = "x", batch = 1 : i64, sequence = 2 : i64, steps = 2 : i64} {
  exec.buffer @t offset 0 : tensor<2x2xi64>
  exec.buffer @l offset 32 : tensor<2x2xi32>
  exec.buffer @x offset 64 : tensor<f32>
  exec.input "t" @t
  exec.input "l" @l
  exec.output "x" @x
}
