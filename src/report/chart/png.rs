//! A figure as a PNG: drawn into an RGB buffer, encoded with the `png` crate (flat colours compress to a few
//! tens of KB).

use plotters::prelude::*;

use super::{
    WIDTH,
    error::{ChartError, drawing},
    figure::Figure,
    font,
};

/// `figure` encoded as PNG.
pub fn png(figure: &impl Figure) -> Result<Vec<u8>, ChartError> {
    font::register()?;
    let height = figure.height();
    let mut rgb = vec![0u8; WIDTH as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, height)).into_drawing_area();
        figure.draw(&root)?;
        root.present().map_err(drawing)?;
    }
    let mut out = Vec::new();
    let mut encoder = ::png::Encoder::new(&mut out, WIDTH, height);
    encoder.set_color(::png::ColorType::Rgb);
    encoder.set_depth(::png::BitDepth::Eight);
    let encode = |e: ::png::EncodingError| ChartError::Encode(e.to_string());
    let mut writer = encoder.write_header().map_err(encode)?;
    writer.write_image_data(&rgb).map_err(encode)?;
    writer.finish().map_err(encode)?;
    Ok(out)
}
